use std::collections::BTreeSet;

use super::{RegionMembers, WhenFree};
use crate::member::{ClusterEvent, MemberRecord, MemberStatus};
use crate::node_id::NodeId;

const AT: &str = "10.0.0.1:7";

/// The member on port `port` of 10.0.0.1, with `status`.
fn member(port: u16, status: MemberStatus) -> MemberRecord {
    let node = NodeId::new("10.0.0.1", port, u64::from(port), 0);
    let mut record = MemberRecord::joining(node, String::new(), BTreeSet::new());
    record.status = status;
    record
}

fn with_status(status: MemberStatus) -> RegionMembers {
    let mut members = RegionMembers::default();
    let record = member(7, status);
    members.apply(&ClusterEvent::MemberUp { member: record });
    members
}

#[test]
fn a_region_that_stops_on_a_member_that_stays_frees_its_shards_at_once() {
    assert_eq!(with_status(MemberStatus::Up).when_free(AT), WhenFree::Now);
    assert_eq!(
        with_status(MemberStatus::Joining).when_free(AT),
        WhenFree::Now
    );
}

#[test]
fn a_leaving_or_downed_member_frees_its_shards_only_at_its_removal() {
    for status in [
        MemberStatus::Leaving,
        MemberStatus::Exiting,
        MemberStatus::Down,
    ] {
        assert_eq!(
            with_status(status).when_free(AT),
            WhenFree::AtRemoval,
            "{status:?}"
        );
    }
}

#[test]
fn a_removed_or_unknown_member_frees_its_shards_after_the_margin() {
    let mut members = with_status(MemberStatus::Down);
    let removed = ClusterEvent::MemberRemoved {
        member: member(7, MemberStatus::Removed),
        previous_status: MemberStatus::Down,
    };
    assert_eq!(members.apply(&removed), Some(AT.to_owned()));
    assert_eq!(members.when_free(AT), WhenFree::AfterMargin);
    assert_eq!(
        RegionMembers::default().when_free(AT),
        WhenFree::AfterMargin
    );
}

#[test]
fn regions_of_up_leaving_and_exiting_members_are_asked_to_register() {
    let mut members = RegionMembers::default();
    let statuses = [
        MemberStatus::Joining,
        MemberStatus::Up,
        MemberStatus::Leaving,
        MemberStatus::Exiting,
        MemberStatus::Down,
    ];
    for (port, status) in (1..).zip(statuses) {
        let record = member(port, status);
        members.apply(&ClusterEvent::MemberUp { member: record });
    }
    let mut hosting: Vec<&String> = members.hosting().collect();
    hosting.sort();
    assert_eq!(hosting, ["10.0.0.1:2", "10.0.0.1:3", "10.0.0.1:4"]);
}

#[test]
fn the_members_version_is_kept_and_forgotten_at_removal() {
    let mut members = RegionMembers::default();
    let mut record = member(7, MemberStatus::Up);
    record.app_version = "1.2.0".to_owned();
    members.apply(&ClusterEvent::MemberUp {
        member: record.clone(),
    });
    assert_eq!(members.member(AT), Some((MemberStatus::Up, "1.2.0")));
    record.status = MemberStatus::Removed;
    members.apply(&ClusterEvent::MemberRemoved {
        member: record,
        previous_status: MemberStatus::Up,
    });
    assert_eq!(members.member(AT), None);
}

/// The member on port 7 of 10.0.0.1 in its incarnation `uid`, with
/// `status`.
fn incarnation(uid: u64, status: MemberStatus) -> MemberRecord {
    let node = NodeId::new("10.0.0.1", 7, uid, 0);
    let mut record = MemberRecord::joining(node, String::new(), BTreeSet::new());
    record.status = status;
    record
}

#[test]
fn a_restarted_member_is_not_forgotten_at_its_old_incarnations_removal() {
    let mut members = RegionMembers::default();
    members.apply(&ClusterEvent::MemberUp {
        member: incarnation(1, MemberStatus::Up),
    });
    // Restarted on the same address: the new one joins and is Up before
    // the old one, downed, is removed.
    members.apply(&ClusterEvent::MemberJoined {
        member: incarnation(2, MemberStatus::Joining),
    });
    members.apply(&ClusterEvent::MemberDowned {
        member: incarnation(1, MemberStatus::Down),
    });
    members.apply(&ClusterEvent::MemberUp {
        member: incarnation(2, MemberStatus::Up),
    });
    let removed = members.apply(&ClusterEvent::MemberRemoved {
        member: incarnation(1, MemberStatus::Removed),
        previous_status: MemberStatus::Down,
    });
    assert_eq!(removed.as_deref(), Some(AT));
    assert_eq!(members.member(AT), Some((MemberStatus::Up, "")));
    // The new one's own removal forgets it.
    members.apply(&ClusterEvent::MemberRemoved {
        member: incarnation(2, MemberStatus::Removed),
        previous_status: MemberStatus::Up,
    });
    assert_eq!(members.member(AT), None);
}
