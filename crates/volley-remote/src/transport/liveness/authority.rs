//! The membership authority mode: once a cluster names the members, the
//! transport stops deciding on its own that a member is gone.
//!
//! Without an authority (the default) every verdict below quarantines, as
//! `incarnations.rs` describes. With one, a verdict on an incarnation the
//! authority calls a member is *reported* to it instead, and the member
//! stays associated until the authority removes it
//! ([`Remoting::member_removed`](crate::transport::Remoting::member_removed)),
//! as Pekko's `ClusterRemoteWatcher` takes death watch of members over
//! from the failure detector.
//!
//! The authority is asked where verdicts are made (the monitor's tick, a
//! control-lane overflow, a peer's refusal), never where messages flow.
//!
//! What bounds memory while it decides: the control lane keeps refusing
//! frames over `limits.max_control_queue_bytes` (counted in
//! `volley_remote_control_refusals_total`), the reliable channel
//! refuses system messages past `system_message_buffer_size`, and the user
//! lanes refuse sends over `batching.max_pending_bytes` (dead letters), as
//! they do for any node.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::transport::events::DisassociationReason;
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::liveness::LivenessContext;
use crate::transport::outbound::association::Association;
use crate::transport::support::lock;
use crate::wire::Address;

/// Who decides that a cluster member is gone: volley-cluster, through
/// [`Remoting::set_membership_authority`](crate::transport::Remoting::set_membership_authority).
///
/// A trait rather than a channel: `is_member` must answer at once, where a
/// verdict is made, and the reports need no actor types in this crate.
/// Both are called with no lock of the transport held, from the
/// transport's tasks: they must not block (hand a report to a task or an
/// actor), and may call back into `Remoting`.
pub trait MembershipAuthority: Send + Sync + 'static {
    /// Whether incarnation `uid` of the node at `address` is a member
    /// whose end the authority decides. Asked once per verdict; must be
    /// cheap.
    fn is_member(&self, address: &Address, uid: u64) -> bool;
    /// A verdict the transport would have acted on for a non-member, or a
    /// hint (`ConnectionLost`). Each kind but `Unreachable`, `Reachable`
    /// and `ConnectionLost` is reported once per incarnation; those at
    /// each change or loss.
    fn report(&self, address: &Address, uid: u64, report: MemberReport);
}

/// What the transport saw of a member, instead of quarantining it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemberReport {
    /// The failure detector stopped hearing its heartbeats.
    Unreachable,
    /// Its heartbeats arrive again after `Unreachable`.
    Reachable,
    /// This node's control connection to it failed while serving (closed
    /// or reset by the peer's side): a hint, not a verdict. A process that
    /// died has its sockets closed by its kernel, so this comes long
    /// before the failure detector's verdict; a live node simply gets a
    /// new connection. Never acted on by the transport itself.
    ConnectionLost,
    /// A system message waited longer than `give_up_system_message_after`
    /// for its ack.
    SystemMessagesOverdue {
        /// `give_up_system_message_after`.
        limit: Duration,
    },
    /// Its control lane refused a frame over
    /// `limits.max_control_queue_bytes` (it does not read).
    ControlQueueOverflow {
        /// `limits.max_control_queue_bytes`.
        limit_bytes: usize,
    },
    /// `system_message_buffer_size` system messages wait for its ack; the
    /// next one was refused.
    SystemMessageBufferFull {
        /// `system_message_buffer_size`.
        limit: usize,
    },
    /// It quarantined this node (its `Disassociate(Quarantined)`, or a
    /// handshake it answered `Quarantined`): Pekko's split-brain resolver
    /// downs this node then (`DownSelfQuarantinedByRemote`).
    QuarantinedThisNode,
}

impl MemberReport {
    /// The bit that marks a once-per-incarnation report as made; `None`
    /// for those reported at every change.
    fn once_bit(&self) -> Option<u8> {
        match self {
            MemberReport::Unreachable | MemberReport::Reachable | MemberReport::ConnectionLost => {
                None
            }
            MemberReport::SystemMessagesOverdue { .. } => Some(1),
            MemberReport::ControlQueueOverflow { .. } => Some(2),
            MemberReport::SystemMessageBufferFull { .. } => Some(4),
            MemberReport::QuarantinedThisNode => Some(8),
        }
    }
}

/// The reason a non-member is quarantined for, in the log and the
/// `Quarantined` event.
impl fmt::Display for MemberReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberReport::Unreachable => f.write_str(
                "the failure detector gave it up (no heartbeat within the acceptable pause)",
            ),
            MemberReport::Reachable => f.write_str("its heartbeats arrive again"),
            MemberReport::ConnectionLost => f.write_str("its control connection failed"),
            MemberReport::SystemMessagesOverdue { limit } => write!(
                f,
                "a system message waited over {limit:?} for its ack (give_up_system_message_after)"
            ),
            MemberReport::ControlQueueOverflow { limit_bytes } => write!(
                f,
                "its control lane queued over {limit_bytes} bytes it did not read (limits.max_control_queue_bytes)"
            ),
            MemberReport::SystemMessageBufferFull { limit } => write!(
                f,
                "{limit} system messages wait for an ack (system_message_buffer_size)"
            ),
            MemberReport::QuarantinedThisNode => f.write_str("it quarantined this node"),
        }
    }
}

/// A second [`Remoting::set_membership_authority`](crate::transport::Remoting::set_membership_authority).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this node's membership authority is already set; it is set once")]
pub struct AuthorityAlreadySet;

/// The node's authority, once set.
#[derive(Default)]
pub(crate) struct Membership {
    authority: OnceLock<Arc<dyn MembershipAuthority>>,
}

impl Membership {
    pub(crate) fn set(
        &self,
        authority: Arc<dyn MembershipAuthority>,
    ) -> Result<(), AuthorityAlreadySet> {
        self.authority
            .set(authority)
            .map_err(|_| AuthorityAlreadySet)
    }

    pub(crate) fn get(&self) -> Option<&dyn MembershipAuthority> {
        self.authority.get().map(|a| &**a)
    }
}

/// The verdicts on members, for any node whose liveness context offers
/// an authority (`RemotingCore`, or a fake in a test).
pub(crate) trait MemberVerdicts: LivenessContext + Sized {
    /// Reports `report` to the authority if the current incarnation of
    /// `association`'s node is a member, and returns true: the caller then
    /// does not act on its verdict. False, reporting nothing, for a
    /// non-member or without an authority. Called with no lock held.
    fn reported_to_authority(&self, association: &Association, report: MemberReport) -> bool {
        let Some(authority) = self.membership_authority() else {
            return false;
        };
        let Some(uid) = lock(&association.control).uid else {
            return false;
        };
        let remote = &association.remote;
        if !authority.is_member(remote, uid) {
            return false;
        }
        if let Some(bit) = report.once_bit() {
            let mut control = lock(&association.control);
            // Reported already, or the incarnation changed meanwhile.
            if control.uid != Some(uid) || control.reported_to_authority & bit != 0 {
                return true;
            }
            control.reported_to_authority |= bit;
        }
        if report == MemberReport::ConnectionLost {
            // The writer logs the failure itself; this is only its hint.
            tracing::debug!(%remote, uid, "member {remote} (uid {uid}): {report}; reported to the membership authority");
        } else {
            tracing::warn!(%remote, uid, ?report, "member {remote} (uid {uid}): {report}; reported to the membership authority, which decides");
        }
        authority.report(remote, uid, report);
        true
    }

    /// The authority removed incarnation `uid` of `association`'s node:
    /// its watchers get `Terminated` now (once each), and the incarnation
    /// is quarantined, at once if it was downed, else after
    /// `quarantine_removed_node_after` (time for it to learn of its
    /// removal over the association and leave by itself).
    fn member_removed(self: &Arc<Self>, association: Arc<Association>, uid: u64, was_down: bool) {
        if was_down {
            let why = "the cluster removed it as Down";
            quarantine_incarnation(&**self, &association, uid, why);
            return;
        }
        let current = {
            let control = lock(&association.control);
            control.uid == Some(uid) && !association.is_down()
        };
        // A replaced or gone incarnation had its watches ended then.
        if current {
            self.address_terminated(&association, Some(uid), DisassociationReason::Shutdown);
        }
        let why = "the cluster removed it after it left (quarantine_removed_node_after passed)";
        let delay = self.settings().quarantine_removed_node_after;
        if delay.is_zero() {
            quarantine_incarnation(&**self, &association, uid, why);
            return;
        }
        let node = self.clone();
        let task = self.system().runtime_handle().spawn(async move {
            tokio::time::sleep(delay).await;
            if !node.is_shut_down() {
                quarantine_incarnation(&*node, &association, uid, why);
            }
        });
        self.track(task);
    }

    /// A new incarnation replaced `old` at the same address: a member's
    /// old incarnation is quarantined, not only gone (Pekko's
    /// `quarantineOldIncarnation`), so that it learns, should it connect,
    /// that it is refused for good.
    fn replaced_incarnation(&self, association: &Association, old: u64) {
        let Some(authority) = self.membership_authority() else {
            return;
        };
        if authority.is_member(&association.remote, old) {
            let why = "a new incarnation of this member shook hands";
            quarantine_incarnation(self, association, old, why);
        }
    }
}

impl<C: LivenessContext> MemberVerdicts for C {}

/// Quarantines incarnation `uid` of `association`'s node: the whole node
/// goes down if `uid` is its current incarnation and it is up; else the
/// incarnation is only marked, and the event published if it was not
/// quarantined yet.
fn quarantine_incarnation<C: Incarnations>(
    node: &C,
    association: &Association,
    uid: u64,
    why: &str,
) {
    if node.incarnation_down(
        association,
        Some(uid),
        DisassociationReason::Quarantined,
        Some(why),
    ) {
        return;
    }
    let newly = {
        let mut control = lock(&association.control);
        control.dead.insert(uid);
        control.quarantined.insert(uid)
    };
    if newly {
        let remote = &association.remote;
        node.end_inbound_connections(remote, uid);
        tracing::error!(%remote, uid, "quarantined incarnation {uid} of {remote}: {why}");
        node.publish(crate::transport::events::RemotingEvent::Quarantined {
            remote: remote.clone(),
            uid,
            reason: why.to_string(),
        });
    }
}

#[cfg(test)]
mod tests;
