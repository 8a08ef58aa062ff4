//! Whether a remote node is still there, and which incarnation of it.
//!
//! `heartbeat` sends, `rtt` times the answers, `failure_detector` is the
//! phi accrual detector and `reachability` keeps one per node and reports
//! the unreachable. `incarnations` decides which incarnation of a node
//! this one talks to, and what ends when one is gone, and `order` which of
//! two incarnations of a node is the newer; `authority`, once a
//! cluster set one, decides instead for the cluster's members.

pub(crate) mod authority;
pub(crate) mod failure_detector;
pub(crate) mod heartbeat;
pub(crate) mod incarnations;
pub(crate) mod order;
pub(crate) mod reachability;
pub(crate) mod rtt;

use crate::transport::liveness::authority::MembershipAuthority;
use crate::transport::liveness::reachability::Reachability;
use crate::transport::outbound::lane::OutboundLane;
use crate::transport::outbound::OutboundContext;
use crate::wire::Address;

/// What deciding whether a node is there, and which incarnation of it,
/// needs of the rest of the transport, on top of the sending side.
pub(crate) trait LivenessContext: OutboundContext {
    /// The failure detectors of the nodes this node hears from.
    fn reachability(&self) -> &Reachability;
    /// Ends incarnation `uid` of `node`'s inbound connections at once
    /// (`inbound/ends.rs`): nothing it sent is delivered from now on.
    fn end_inbound_connections(&self, node: &Address, uid: u64);
    /// Ends every remote watch of an actor on `node` with `Terminated`
    /// (`control/remote_watch.rs`); returns how many.
    fn end_watches_of_node(&self, node: &Address) -> usize;
    /// Whether the heartbeat task of a stopped association may end
    /// (`idle/`).
    fn may_stop_heartbeats(&self, control: &OutboundLane) -> bool;
    /// Who decides that a member is gone, once set (`authority.rs`).
    fn membership_authority(&self) -> Option<&dyn MembershipAuthority>;
}
