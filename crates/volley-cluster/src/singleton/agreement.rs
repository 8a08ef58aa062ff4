//! Whether this node's view of the members may lag the cluster's.
//!
//! Records travel one by one, so a node can hear that the leader moved it
//! Up before it hears that an older member was moved Up too (in the same
//! round, or an earlier one): it would then see itself as the oldest Up
//! member and start a second instance. Akka's gossip carries the whole
//! state at once and has no such window. A node that is about to start the
//! singleton therefore waits until every reachable member it knows has
//! seen the very table it holds: a member moved Up before it holds a
//! table where that member is Up, which differs from the lagging one.

use std::collections::BTreeSet;

use super::oldest::Membership;
use crate::member::{ClusterState, MemberStatus, UniqueAddress};

/// True if `state`, one snapshot of the table, agrees that `me` may start
/// the instance: every member it counts has seen that table, and `me` is
/// its oldest Up member with `role`. The manager's own view follows the
/// event stream, which lags the table; both must agree.
pub(crate) fn may_start(state: &ClusterState, me: &UniqueAddress, role: Option<&str>) -> bool {
    let oldest = Membership::from_state(state)
        .oldest_up(role)
        .map(|record| record.unique_address());
    oldest.as_ref() == Some(me) && view_agreed(state)
}

/// True if every reachable Joining, WeaklyUp, Up or Leaving member of `state` has
/// seen the table this node holds (this node included).
pub(crate) fn view_agreed(state: &ClusterState) -> bool {
    let seen: BTreeSet<&UniqueAddress> = state.seen_by.iter().collect();
    let unreachable: BTreeSet<UniqueAddress> = state
        .unreachable
        .iter()
        .map(|record| record.unique_address())
        .collect();
    state.members.iter().all(|record| {
        let member = record.unique_address();
        let counts = matches!(
            record.status,
            MemberStatus::Joining
                | MemberStatus::WeaklyUp
                | MemberStatus::Up
                | MemberStatus::Leaving
        );
        !counts || unreachable.contains(&member) || seen.contains(&member)
    })
}

#[cfg(test)]
mod tests {
    use super::{may_start, view_agreed};
    use crate::member::{ClusterState, MemberRecord, MemberStatus};
    use crate::singleton::oldest::tests::member;

    fn state(members: &[MemberRecord], seen_by: &[&MemberRecord]) -> ClusterState {
        ClusterState {
            members: members.to_vec(),
            unreachable: Vec::new(),
            leader: None,
            seen_by: seen_by.iter().map(|r| r.unique_address()).collect(),
            self_member: members.first().cloned(),
            ..ClusterState::default()
        }
    }

    #[test]
    fn a_view_that_a_joining_weakly_up_or_up_member_has_not_seen_is_not_agreed() {
        let me = member(2, 2, MemberStatus::Up, &[]);
        // Moved Up before this node, which still holds it as Joining.
        let lagging = member(1, 0, MemberStatus::Joining, &[]);
        let members = [me.clone(), lagging.clone()];
        assert!(!view_agreed(&state(&members, &[&me])));
        assert!(view_agreed(&state(&members, &[&me, &lagging])));
        let up = member(3, 3, MemberStatus::Up, &[]);
        assert!(!view_agreed(&state(&[me.clone(), up], &[&me])));
        // A WeaklyUp member is asked as a Joining one is, and is never
        // the oldest Up member.
        let weakly = member(1, 0, MemberStatus::WeaklyUp, &[]);
        let members = [me.clone(), weakly.clone()];
        assert!(!view_agreed(&state(&members, &[&me])));
        let agreed = state(&members, &[&me, &weakly]);
        assert!(may_start(&agreed, &me.unique_address(), None));
        assert!(!may_start(&agreed, &weakly.unique_address(), None));
    }

    #[test]
    fn unreachable_exiting_and_downed_members_are_not_waited_for() {
        let me = member(1, 1, MemberStatus::Up, &[]);
        let cut_off = member(2, 2, MemberStatus::Up, &[]);
        let exiting = member(3, 3, MemberStatus::Exiting, &[]);
        let downed = member(4, 4, MemberStatus::Down, &[]);
        let members = [me.clone(), cut_off.clone(), exiting, downed];
        let mut view = state(&members, &[&me]);
        assert!(!view_agreed(&view));
        view.unreachable = vec![cut_off];
        assert!(view_agreed(&view));
    }

    #[test]
    fn only_the_oldest_up_member_of_an_agreed_table_may_start() {
        let older = member(1, 1, MemberStatus::Up, &[]);
        let me = member(2, 2, MemberStatus::Up, &[]);
        let members = [me.clone(), older.clone()];
        let agreed = state(&members, &[&me, &older]);
        assert!(!may_start(&agreed, &me.unique_address(), None));
        assert!(may_start(&agreed, &older.unique_address(), None));
        let lagging = state(&members, &[&older]);
        assert!(!may_start(&lagging, &older.unique_address(), None));
    }
}
