use std::collections::{BTreeMap, BTreeSet};

use super::{state_as_events, ClusterEvent};
use crate::member::{ClusterState, MemberRecord, MemberStatus};
use crate::node_id::NodeId;

fn record(port: u16, status: MemberStatus) -> MemberRecord {
    let node = NodeId::new("10.0.0.1", port, u64::from(port), 0);
    let mut record = MemberRecord::joining(node, String::new(), BTreeSet::new());
    record.status = status;
    record
}

#[test]
fn the_state_as_events_names_each_member_by_its_status_then_reachability_and_leaders() {
    let (joining, up, down) = (
        record(1, MemberStatus::Joining),
        record(2, MemberStatus::Up),
        record(3, MemberStatus::Down),
    );
    let leader = Some(up.unique_address());
    let state = ClusterState {
        members: vec![joining.clone(), up.clone(), down.clone()],
        unreachable: vec![down.clone()],
        leader: leader.clone(),
        role_leaders: BTreeMap::from([("backend".to_owned(), leader.clone())]),
        ..ClusterState::default()
    };
    assert_eq!(
        state_as_events(&state),
        vec![
            ClusterEvent::MemberJoined { member: joining },
            ClusterEvent::MemberUp { member: up },
            ClusterEvent::MemberDowned {
                member: down.clone()
            },
            ClusterEvent::UnreachableMember { member: down },
            ClusterEvent::LeaderChanged {
                leader: leader.clone()
            },
            ClusterEvent::RoleLeaderChanged {
                role: "backend".to_owned(),
                leader,
            },
        ]
    );
    assert_eq!(
        state_as_events(&ClusterState::default()),
        vec![ClusterEvent::LeaderChanged { leader: None }]
    );
}
