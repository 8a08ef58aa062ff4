//! Heartbeat round trips: how long a heartbeat takes to come back as the
//! peer's HeartbeatAck.
//!
//! volley's connections carry frames one way, so the ack comes back on the
//! peer's own outbound control connection, and it carries no sequence
//! number (both PDUs are constant frames). The round trip is therefore
//! measured only when it is unambiguous: the time from a heartbeat to the
//! first ack after it, when no earlier heartbeat was still unanswered. A
//! heartbeat sent while one is unanswered voids the measurement (an ack
//! then could answer either); the next one starts afresh. It includes the
//! peer's queueing on its control lane, which is what a slow peer looks
//! like from here. Round trips longer than the heartbeat interval are
//! therefore not measured, by design: the failure detector judges those.

use std::time::Instant;

use crate::transport::liveness::LivenessContext;
use crate::transport::support::lock;
use crate::wire::{Address, Lane};

/// Answers a heartbeat from `peer` on this node's own control connection
/// to it, if this node has an association with the peer that is up and
/// connected (`OutboundLane::send_heartbeat_ack` says when else not): an
/// ack never creates, starts or dials anything, so a peer cannot make this
/// node connect anywhere by sending heartbeats. Looked up per heartbeat
/// (once a second), not per connection, so an association made after the
/// peer's connection began answers too.
pub(crate) fn answer_heartbeat(core: &(impl LivenessContext + ?Sized), peer: &Address) {
    let Some(association) = core.associations().find(peer) else {
        return;
    };
    if association.is_down() {
        return;
    }
    if let Err(e) = association.lane(Lane::Control).send_heartbeat_ack() {
        tracing::debug!(%peer, "heartbeat not answered: {e}");
    }
}

/// A HeartbeatAck from `peer`: times this node's last heartbeat to it. An
/// ack from a node this node has no association with is ignored.
pub(crate) fn ack_heard(core: &(impl LivenessContext + ?Sized), peer: &Address) {
    if let Some(association) = core.associations().find(peer) {
        let keep = core.associations().is_metered();
        lock(&association.heartbeat_rtt).acked(Instant::now(), keep);
    }
}
