use super::{duty, Duty};
use crate::member::{ClusterEvent, MemberRecord, MemberStatus};
use crate::singleton::oldest::tests::{member, up};
use crate::singleton::oldest::Membership;

fn members(records: &[MemberRecord]) -> Membership {
    let mut members = Membership::default();
    for record in records {
        members.apply(&up(record.clone()));
    }
    members
}

#[test]
fn the_oldest_starts_and_the_others_stay_younger() {
    let (a, b) = (
        member(1, 1, MemberStatus::Up, &[]),
        member(2, 2, MemberStatus::Up, &[]),
    );
    let view = members(&[a.clone(), b.clone()]);
    assert_eq!(duty(&view, &a.unique_address(), None, false), Duty::Start);
    assert_eq!(duty(&view, &a.unique_address(), None, true), Duty::Keep);
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::Younger);
}

#[test]
fn a_leaving_oldest_hands_over_and_the_next_asks_it_first() {
    let a = member(1, 1, MemberStatus::Leaving, &[]);
    let b = member(2, 2, MemberStatus::Up, &[]);
    let view = members(&[a.clone(), b.clone()]);
    assert_eq!(duty(&view, &a.unique_address(), None, true), Duty::HandOver);
    assert_eq!(
        duty(&view, &b.unique_address(), None, false),
        Duty::AwaitHandOver(vec![a.unique_address()])
    );
}

#[test]
fn a_leaver_that_handed_over_is_not_waited_for_while_still_a_member() {
    let a = member(1, 1, MemberStatus::Exiting, &[]);
    let b = member(2, 2, MemberStatus::Up, &[]);
    let mut view = members(&[a.clone(), b.clone()]);
    view.release(&a.unique_address());
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::Start);
    view.apply(&ClusterEvent::MemberRemoved {
        member: member(1, 1, MemberStatus::Removed, &[]),
        previous_status: MemberStatus::Exiting,
    });
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::Start);
}

#[test]
fn a_leaver_removed_before_answering_is_still_asked_until_released() {
    let b = member(2, 2, MemberStatus::Up, &[]);
    let mut view = members(std::slice::from_ref(&b));
    view.apply(&ClusterEvent::MemberRemoved {
        member: member(1, 1, MemberStatus::Removed, &[]),
        previous_status: MemberStatus::Exiting,
    });
    let gone = member(1, 1, MemberStatus::Removed, &[]).unique_address();
    assert_eq!(
        duty(&view, &b.unique_address(), None, false),
        Duty::AwaitHandOver(vec![gone.clone()])
    );
    view.release(&gone);
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::Start);
}

#[test]
fn after_a_crash_the_next_waits_for_the_removal_of_the_downed_oldest() {
    let a = member(1, 1, MemberStatus::Up, &[]);
    let b = member(2, 2, MemberStatus::Up, &[]);
    let mut view = members(&[a.clone(), b.clone()]);
    // Unreachable but Up: still the oldest, nobody moves.
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::Younger);
    view.apply(&ClusterEvent::MemberDowned {
        member: member(1, 1, MemberStatus::Down, &[]),
    });
    assert_eq!(
        duty(&view, &b.unique_address(), None, false),
        Duty::AwaitRemoval
    );
    view.apply(&ClusterEvent::MemberRemoved {
        member: member(1, 1, MemberStatus::Removed, &[]),
        previous_status: MemberStatus::Down,
    });
    assert_eq!(
        duty(&view, &b.unique_address(), None, false),
        Duty::AwaitMargin(vec![a.unique_address()])
    );
    view.margin_passed(&a.unique_address());
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::Start);
}

#[test]
fn a_downed_or_unknown_node_hands_over() {
    let a = member(1, 1, MemberStatus::Down, &[]);
    let view = members(std::slice::from_ref(&a));
    assert_eq!(duty(&view, &a.unique_address(), None, true), Duty::HandOver);
    let unknown = member(5, 0, MemberStatus::Up, &[]).unique_address();
    assert_eq!(duty(&view, &unknown, None, false), Duty::Younger);
}

#[test]
fn the_role_limits_who_is_waited_for() {
    let a = member(1, 1, MemberStatus::Leaving, &["front"]);
    let b = member(2, 2, MemberStatus::Up, &["back"]);
    let view = members(&[a, b.clone()]);
    assert_eq!(
        duty(&view, &b.unique_address(), Some("back"), false),
        Duty::Start
    );
}

#[test]
fn a_joining_member_with_a_lower_address_may_be_older_and_is_waited_for() {
    let joining = member(1, 0, MemberStatus::Joining, &[]);
    let b = member(2, 2, MemberStatus::Up, &[]);
    let mut view = members(std::slice::from_ref(&b));
    view.apply(&ClusterEvent::MemberJoined {
        member: joining.clone(),
    });
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::AwaitUp);
    view.apply(&up(member(1, 1, MemberStatus::Up, &[])));
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::Younger);
    let later = member(3, 0, MemberStatus::Joining, &[]);
    view.apply(&ClusterEvent::MemberJoined { member: later });
    let a = member(1, 1, MemberStatus::Up, &[]);
    assert_eq!(duty(&view, &a.unique_address(), None, false), Duty::Start);
}

#[test]
fn a_weakly_up_member_never_runs_the_instance_and_is_waited_for_as_a_joining_one() {
    // The lowest address, WeaklyUp: not the oldest, since not Up.
    let weakly = member(1, 0, MemberStatus::WeaklyUp, &[]);
    let b = member(2, 2, MemberStatus::Up, &[]);
    let mut view = members(std::slice::from_ref(&b));
    view.apply(&ClusterEvent::MemberWeaklyUp {
        member: weakly.clone(),
    });
    assert_eq!(view.oldest_up(None), Some(&b));
    assert_eq!(
        duty(&view, &weakly.unique_address(), None, false),
        Duty::Younger
    );
    // The leader moves it Up with the next round, numbered first.
    assert_eq!(duty(&view, &b.unique_address(), None, false), Duty::AwaitUp);
    view.apply(&up(member(1, 1, MemberStatus::Up, &[])));
    assert_eq!(
        duty(&view, &weakly.unique_address(), None, false),
        Duty::Start
    );
}
