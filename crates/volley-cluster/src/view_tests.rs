use foca::OwnedNotification as N;

use super::*;

fn id(uid: u64, epoch: u16) -> NodeId {
    NodeId::with_epoch("h", 1, uid, uid, epoch)
}

fn events(view: &mut MembershipView, notifications: Vec<N<NodeId>>) -> Vec<MembershipEvent> {
    let mut events = Vec::new();
    view.apply(notifications.into(), &mut events);
    events
}

#[test]
fn a_member_goes_up_unreachable_and_back_under_a_renewed_epoch() {
    let mut view = MembershipView::default();
    assert_eq!(
        events(&mut view, vec![N::MemberUp(id(1, 0))]),
        [MembershipEvent::MemberUp { member: id(1, 0) }]
    );
    assert_eq!(
        events(&mut view, vec![N::MemberDown(id(1, 0))]),
        [MembershipEvent::MemberUnreachable { member: id(1, 0) }]
    );
    assert_eq!(
        events(
            &mut view,
            vec![N::Rename(id(1, 0), id(1, 1)), N::MemberUp(id(1, 1))]
        ),
        [MembershipEvent::MemberReachable { member: id(1, 1) }]
    );
}

#[test]
fn a_renamed_active_member_stays_up_without_an_event() {
    let mut view = MembershipView::default();
    events(&mut view, vec![N::MemberUp(id(1, 0))]);
    assert_eq!(events(&mut view, vec![N::Rename(id(1, 0), id(1, 1))]), []);
    assert_eq!(
        events(&mut view, vec![N::MemberDown(id(1, 1))]),
        [MembershipEvent::MemberUnreachable { member: id(1, 1) }]
    );
}

#[test]
fn a_new_incarnation_replacing_an_active_one_is_up_at_once() {
    let mut view = MembershipView::default();
    events(&mut view, vec![N::MemberUp(id(1, 0))]);
    assert_eq!(
        events(&mut view, vec![N::Rename(id(1, 0), id(2, 0))]),
        [
            MembershipEvent::IncarnationReplaced {
                old: id(1, 0),
                new: id(2, 0)
            },
            MembershipEvent::MemberUp { member: id(2, 0) }
        ]
    );
}

#[test]
fn a_new_incarnation_replacing_an_unreachable_one_is_up_when_foca_says() {
    let mut view = MembershipView::default();
    events(
        &mut view,
        vec![N::MemberUp(id(1, 0)), N::MemberDown(id(1, 0))],
    );
    assert_eq!(
        events(
            &mut view,
            vec![N::Rename(id(1, 0), id(2, 0)), N::MemberUp(id(2, 0))]
        ),
        [
            MembershipEvent::IncarnationReplaced {
                old: id(1, 0),
                new: id(2, 0)
            },
            MembershipEvent::MemberUp { member: id(2, 0) }
        ]
    );
}

#[test]
fn a_forgotten_member_is_removed_once() {
    let mut view = MembershipView::default();
    events(
        &mut view,
        vec![N::MemberUp(id(1, 0)), N::MemberDown(id(1, 0))],
    );
    let mut removed = Vec::new();
    view.forget_if_gone(&id(1, 0), true, &mut removed);
    assert_eq!(removed, []);
    view.forget_if_gone(&id(1, 0), false, &mut removed);
    view.forget_if_gone(&id(1, 0), false, &mut removed);
    assert_eq!(
        removed,
        [MembershipEvent::MemberRemoved { member: id(1, 0) }]
    );
}

#[test]
fn self_notifications_map_one_to_one() {
    let mut view = MembershipView::default();
    assert_eq!(
        events(
            &mut view,
            vec![N::Active, N::Idle, N::Rejoin(id(1, 1)), N::Defunct]
        ),
        [
            MembershipEvent::Joined,
            MembershipEvent::Alone,
            MembershipEvent::Rejoined { identity: id(1, 1) },
            MembershipEvent::Defunct
        ]
    );
}
