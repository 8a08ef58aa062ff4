//! Cluster events, named as Akka's `ClusterEvent` (design §3.7).

use super::knowledge::StatusChange;
use super::record::{MemberRecord, UniqueAddress};
use super::state::ClusterState;
use super::status::MemberStatus;

/// One change in the membership as this node sees it. Each is reported
/// once per node per member transition; the status events of one input
/// come in status order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterEvent {
    /// A member is Joining.
    MemberJoined {
        /// The member's record.
        member: MemberRecord,
    },
    /// A member is WeaklyUp: the leader moved it on from Joining while
    /// convergence was out of reach (Akka's `MemberWeaklyUp`). A
    /// `MemberUp` follows once the leader sees convergence again.
    MemberWeaklyUp {
        /// The member's record.
        member: MemberRecord,
    },
    /// A member is Up.
    MemberUp {
        /// The member's record.
        member: MemberRecord,
    },
    /// A member is Leaving.
    MemberLeft {
        /// The member's record.
        member: MemberRecord,
    },
    /// A member is Exiting.
    MemberExited {
        /// The member's record.
        member: MemberRecord,
    },
    /// A member is Down.
    MemberDowned {
        /// The member's record.
        member: MemberRecord,
    },
    /// A member is Removed.
    MemberRemoved {
        /// The member's last record, its status Removed.
        member: MemberRecord,
        /// Its status before (Down, Exiting, or an earlier one if this
        /// node missed steps).
        previous_status: MemberStatus,
    },
    /// A member's failure detector verdict: this node cannot reach it.
    UnreachableMember {
        /// The member's record.
        member: MemberRecord,
    },
    /// An unreachable member is reachable again.
    ReachableMember {
        /// The member's record.
        member: MemberRecord,
    },
    /// The leader this node computes changed.
    LeaderChanged {
        /// The new leader, if any.
        leader: Option<UniqueAddress>,
    },
    /// The leader of the members with `role` changed (Akka's
    /// `RoleLeaderChanged`); `None` when no reachable member has it.
    RoleLeaderChanged {
        /// The role.
        role: String,
        /// Its new leader, if any.
        leader: Option<UniqueAddress>,
    },
    /// The membership as this node saw it when the listener subscribed
    /// with [`InitialState::AsSnapshot`] (Akka's `CurrentClusterState`):
    /// the first event such a listener gets, and only it; the changes
    /// after it follow as the other events. Never published on the event
    /// stream.
    CurrentClusterState {
        /// The state (boxed: it is much larger than the other events).
        state: Box<ClusterState>,
    },
}

/// What a new subscriber gets first (Akka's `InitialStateAsEvents` and
/// `InitialStateAsSnapshot`), before every change after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitialState {
    /// The current state as the events a listener from the start would
    /// have seen last ([`state_as_events`]).
    #[default]
    AsEvents,
    /// The current state as one [`ClusterEvent::CurrentClusterState`].
    AsSnapshot,
}

impl ClusterEvent {
    /// The member whose status this event reports (`MemberJoined` to
    /// `MemberDowned`), with that status; `None` for a removal and for
    /// the reachability and leader events.
    pub fn status_member(&self) -> Option<&MemberRecord> {
        match self {
            ClusterEvent::MemberJoined { member }
            | ClusterEvent::MemberWeaklyUp { member }
            | ClusterEvent::MemberUp { member }
            | ClusterEvent::MemberLeft { member }
            | ClusterEvent::MemberExited { member }
            | ClusterEvent::MemberDowned { member } => Some(member),
            _ => None,
        }
    }
}

/// The event for a status change, if the status has one (a member first
/// heard of as Removed has none).
pub(crate) fn status_event(change: StatusChange) -> Option<ClusterEvent> {
    let member = change.record;
    Some(match member.status {
        MemberStatus::Joining => ClusterEvent::MemberJoined { member },
        MemberStatus::WeaklyUp => ClusterEvent::MemberWeaklyUp { member },
        MemberStatus::Up => ClusterEvent::MemberUp { member },
        MemberStatus::Leaving => ClusterEvent::MemberLeft { member },
        MemberStatus::Exiting => ClusterEvent::MemberExited { member },
        MemberStatus::Down => ClusterEvent::MemberDowned { member },
        MemberStatus::Removed => ClusterEvent::MemberRemoved {
            member,
            previous_status: change.previous?,
        },
    })
}

/// The status events of `changes`, in status order (stable within one
/// status).
pub(crate) fn status_events(mut changes: Vec<StatusChange>) -> Vec<ClusterEvent> {
    changes.sort_by_key(|change| change.record.status);
    changes.into_iter().filter_map(status_event).collect()
}

/// `state` as events (Akka's `InitialStateAsEvents`): each member's status
/// event, in address order; an `UnreachableMember` for each member this
/// node cannot reach; the leader; each role's leader. What a subscriber
/// that had listened from the start would know last.
pub fn state_as_events(state: &ClusterState) -> Vec<ClusterEvent> {
    let members = state.members.iter().filter_map(|record| {
        status_event(StatusChange {
            record: record.clone(),
            previous: None,
        })
    });
    let unreachable = state
        .unreachable
        .iter()
        .map(|member| ClusterEvent::UnreachableMember {
            member: member.clone(),
        });
    let leader = ClusterEvent::LeaderChanged {
        leader: state.leader.clone(),
    };
    let role_leaders =
        state
            .role_leaders
            .iter()
            .map(|(role, leader)| ClusterEvent::RoleLeaderChanged {
                role: role.clone(),
                leader: leader.clone(),
            });
    members
        .chain(unreachable)
        .chain(std::iter::once(leader))
        .chain(role_leaders)
        .collect()
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
