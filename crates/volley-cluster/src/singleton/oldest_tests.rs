use std::collections::BTreeSet;

use super::{is_older, Membership};
use crate::member::{ClusterEvent, MemberRecord, MemberStatus};
use crate::node_id::NodeId;

/// A member on port `port`, Up as the `up`-th, with `roles`.
pub(crate) fn member(port: u16, up: u32, status: MemberStatus, roles: &[&str]) -> MemberRecord {
    let roles: BTreeSet<String> = roles.iter().map(|r| (*r).to_owned()).collect();
    let mut record = MemberRecord::joining(
        NodeId::new("10.0.0.1", port, u64::from(port), 0),
        "0.0.0".to_owned(),
        roles,
    );
    record.status = status;
    record.up_number = up;
    record
}

pub(crate) fn up(member: MemberRecord) -> ClusterEvent {
    ClusterEvent::MemberUp { member }
}

#[test]
fn the_oldest_is_the_first_up_not_the_lowest_address() {
    let mut members = Membership::default();
    members.apply(&up(member(1, 3, MemberStatus::Up, &[])));
    members.apply(&up(member(2, 1, MemberStatus::Up, &[])));
    members.apply(&up(member(3, 2, MemberStatus::Up, &[])));
    assert_eq!(members.oldest_up(None).map(|r| r.node.port()), Some(2));
}

#[test]
fn equal_up_numbers_are_ordered_by_address_and_never_up_is_youngest() {
    let a = member(1, 1, MemberStatus::Up, &[]);
    let b = member(2, 1, MemberStatus::Up, &[]);
    let joining = member(0, 0, MemberStatus::Joining, &[]);
    assert!(is_older(&a, &b));
    assert!(!is_older(&b, &a));
    assert!(is_older(&b, &joining));
}

#[test]
fn only_up_members_with_the_role_are_candidates() {
    let mut members = Membership::default();
    members.apply(&up(member(1, 1, MemberStatus::Up, &["front"])));
    members.apply(&up(member(2, 2, MemberStatus::Up, &["back"])));
    members.apply(&up(member(3, 3, MemberStatus::Up, &["back"])));
    assert_eq!(
        members.oldest_up(Some("back")).map(|r| r.node.port()),
        Some(2)
    );
    members.apply(&ClusterEvent::MemberLeft {
        member: member(2, 2, MemberStatus::Leaving, &["back"]),
    });
    assert_eq!(
        members.oldest_up(Some("back")).map(|r| r.node.port()),
        Some(3)
    );
    assert_eq!(members.oldest_up(Some("none")), None);
}

#[test]
fn a_late_event_does_not_move_a_member_back() {
    let mut members = Membership::default();
    members.apply(&ClusterEvent::MemberLeft {
        member: member(1, 1, MemberStatus::Leaving, &[]),
    });
    assert!(!members.apply(&up(member(1, 1, MemberStatus::Up, &[]))));
    assert_eq!(members.oldest_up(None), None);
}

#[test]
fn a_leaver_removed_is_remembered_until_released_a_downed_one_is_not() {
    let mut members = Membership::default();
    let me = member(9, 9, MemberStatus::Up, &[]);
    for (port, previous) in [(1, MemberStatus::Exiting), (2, MemberStatus::Down)] {
        members.apply(&ClusterEvent::MemberRemoved {
            member: member(port, u32::from(port), MemberStatus::Removed, &[]),
            previous_status: previous,
        });
    }
    let left: Vec<u16> = members
        .older_left(&me, None)
        .map(|r| r.node.port())
        .collect();
    assert_eq!(left, vec![1]);
    members.release(&member(1, 1, MemberStatus::Removed, &[]).unique_address());
    assert_eq!(members.older_left(&me, None).count(), 0);
}

/// An up-number that grew in the table, with no event, changes the
/// oldest once the record is refreshed.
#[test]
fn a_refreshed_up_number_changes_the_oldest() {
    let mut members = Membership::default();
    members.apply(&up(member(1, 1, MemberStatus::Up, &[])));
    members.apply(&up(member(2, 2, MemberStatus::Up, &[])));
    assert_eq!(members.oldest_up(None).map(|r| r.node.port()), Some(1));
    assert!(members.refresh(&member(1, 3, MemberStatus::Up, &[])));
    assert_eq!(members.oldest_up(None).map(|r| r.node.port()), Some(2));
    assert!(!members.refresh(&member(2, 2, MemberStatus::Up, &[])));
    assert!(!members.refresh(&member(3, 1, MemberStatus::Up, &[])));
    assert!(members
        .record(&member(3, 1, MemberStatus::Up, &[]).unique_address())
        .is_none());
}
