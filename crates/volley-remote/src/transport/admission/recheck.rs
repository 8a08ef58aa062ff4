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

use crate::transport::admission::probe::confirm_claim;
use crate::transport::admission::AdmissionContext;
use crate::transport::incarnation::Incarnation;
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::outbound::association::Origin;
use crate::transport::support::log_limited;
use crate::wire::{Address, Lane};

/// A heartbeat came from incarnation `uid` of `from`, which this node
/// does not dial back: checks its address again if that may make this
/// node dial it, and the last check is over.
pub(crate) fn heartbeat_from_undialed(core: &Arc<impl AdmissionContext>, from: &Address, uid: u64) {
    let may_dial = from != core.address() && core.trust().connects_back_to(from);
    if !may_dial || !core.probes().is_due(from) || core.is_shut_down() {
        return;
    }
    let owned = core.clone();
    let from = from.clone();
    let task = tokio::spawn(async move { recheck(&*owned, &from, uid).await });
    core.track(task);
}

/// Checks the claim of `from` as incarnation `uid` again, and
/// associates with it if its address now answers as that incarnation.
async fn recheck(core: &impl AdmissionContext, from: &Address, uid: u64) {
    if core.associations().find(from).is_some() || !confirm_claim(core, from, uid).await {
        return;
    }
    let association = match core.associate(from, Origin::Vouched) {
        Ok(association) => association,
        Err(e) => return tracing::debug!(remote = %from, "not dialing back after all: {e}"),
    };
    match core.handshake_seen(&association, Incarnation::new(uid, None), Lane::Control) {
        Ok(()) => {
            log_limited!(info, remote = %from, uid, "the address a peer claimed answered a later check: dialing it back");
        }
        Err(refusal) => {
            log_limited!(warn, remote = %from, "not dialing back after all: {refusal}");
        }
    }
}
