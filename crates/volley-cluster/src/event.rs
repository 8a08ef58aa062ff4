//! What the SWIM layer of the core reports: foca's notifications, mapped
//! onto volley's members (design §1.8, §3.5) as far as foca alone allows.
//!
//! foca's `MemberDown` means *unreachable* here, not Akka's Down. Member
//! status (Joining, Up, Leaving, ...), the leader and Akka's events are
//! the membership's: [`crate::ClusterEvent`].

use crate::node_id::NodeId;

/// One change in what this node knows of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembershipEvent {
    /// This node is known by an active member: it has joined the SWIM
    /// group (foca `Active`).
    Joined,
    /// No active member is left in this node's view (foca `Idle`).
    Alone,
    /// This node was declared down and came back under a renewed identity,
    /// the same incarnation one epoch later (foca `Rejoin`): it was
    /// suspected falsely, or cut off.
    Rejoined {
        /// The identity this node now uses.
        identity: NodeId,
    },
    /// This node was declared down and cannot renew its identity (foca
    /// `Defunct`): it stays out until it is given a new one.
    Defunct,
    /// An incarnation is active in this node's view for the first time.
    MemberUp {
        /// The member.
        member: NodeId,
    },
    /// An active member is no longer reachable: foca declared it down.
    MemberUnreachable {
        /// The member, with the identity foca declared down.
        member: NodeId,
    },
    /// An unreachable member is active again, usually under a renewed
    /// epoch of the same incarnation.
    MemberReachable {
        /// The member, with the identity foca now holds.
        member: NodeId,
    },
    /// Another incarnation took over a member's address (a restart): the
    /// old incarnation is gone from this node's view. A `MemberUp` of the
    /// new one follows once it is active.
    IncarnationReplaced {
        /// The incarnation that is gone.
        old: NodeId,
        /// The incarnation that took its address.
        new: NodeId,
    },
    /// foca forgot an unreachable member after `remove_down_after`.
    MemberRemoved {
        /// The member that was forgotten.
        member: NodeId,
    },
}
