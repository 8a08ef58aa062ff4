//! A claim whose address did not answer its check is checked again while
//! the node that claimed it keeps heartbeating.
//!
//! The address check (`probe.rs`) runs once, at the handshake, within half
//! the handshake timeout. A real node can miss it: paused (SIGSTOP, a long
//! collection), overloaded, or slow through a TLS handshake. Without a
//! second look, this node would never dial it back, so it would get no
//! heartbeats, acks or replies from here, its detector would give this
//! node up, and the two would be split until one of them reconnected.
//!
//! So a heartbeat from a node this node does not dial back, but could,
//! starts the check again once the last one's outcome is older than the
//! check's window. It costs no more than the first check: at most one
//! connection per claimed `host:port` per window (a peer that handshakes
//! again every window could have it anyway), and nothing while a check of
//! that place is under way. A claim it confirms gets its association, as
//! one confirmed at the handshake does; the readers of the node's
//! connections take it up with their next read (`inbound/reader.rs`).

use std::sync::Arc;

use crate::transport::core::RemotingCore;
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::outbound::association::Origin;
use crate::transport::support::log_limited;
use crate::wire::{Address, Lane};

impl RemotingCore {
    /// A heartbeat came from incarnation `uid` of `from`, which this node
    /// does not dial back: checks its address again if that may make this
    /// node dial it, and the last check is over.
    pub(crate) fn heartbeat_from_undialed(self: &Arc<Self>, from: &Address, uid: u64) {
        let may_dial = *from != self.address && self.trust.connects_back_to(from);
        if !may_dial || !self.probes.is_due(from) || self.is_shut_down() {
            return;
        }
        let core = self.clone();
        let from = from.clone();
        let task = tokio::spawn(async move { core.recheck(&from, uid).await });
        self.track(task);
    }

    /// Checks the claim of `from` as incarnation `uid` again, and
    /// associates with it if its address now answers as that incarnation.
    async fn recheck(&self, from: &Address, uid: u64) {
        if self.associations.find(from).is_some() || !self.confirm_claim(from, uid).await {
            return;
        }
        let association = match self.associate(from, Origin::Vouched) {
            Ok(association) => association,
            Err(e) => return tracing::debug!(remote = %from, "not dialing back after all: {e}"),
        };
        match self.handshake_seen(&association, uid, Lane::Control) {
            Ok(()) => {
                log_limited!(info, remote = %from, uid, "the address a peer claimed answered a later check: dialing it back");
            }
            Err(refusal) => {
                log_limited!(warn, remote = %from, "not dialing back after all: {refusal}");
            }
        }
    }
}
