//! The sending side of failure detection: every association sends a
//! Heartbeat every interval on its control lane.
//!
//! The control lane has its own connection, so a heartbeat never waits
//! behind user payload (megabytes queued on the large lane would otherwise
//! look like silence). Heartbeats go out whether or not anything else is
//! sent: the peer's detector judges the gaps between them, and other
//! traffic does not count. The peer records the arrival
//! (`liveness/reachability.rs`) and, when it has a connection of its own to this
//! node, answers with a HeartbeatAck, which times the round trip
//! (`liveness/rtt.rs`); the detector does not depend on the answers.

use std::sync::Arc;

use crate::transport::liveness::LivenessContext;
use crate::transport::outbound::lane::OutboundLane;
use crate::transport::support::lock;

/// Sends a heartbeat on `control` now and then every heartbeat interval,
/// until remoting shuts down (which also aborts the task) or the
/// association is stopped for idleness.
pub(crate) async fn run_heartbeats(control: Arc<OutboundLane>, core: Arc<impl LivenessContext>) {
    let mut ticks = tokio::time::interval(core.settings().failure_detector.heartbeat_interval);
    // After a stall, one heartbeat, not a burst: a burst would teach the
    // peer's detector intervals near zero.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if core.is_shut_down() || (control.is_retired() && core.may_stop_heartbeats(&control)) {
            return;
        }
        if control.has_queued() {
            // The lane is not writing (no connection, or a stall): a
            // heartbeat queued now would reach the peer late, in a burst
            // with the ones after it. One already waiting is enough.
            continue;
        }
        match control.send_heartbeat() {
            Ok(true) => {
                if let Some(association) = control.association() {
                    lock(&association.heartbeat_rtt).sent(std::time::Instant::now());
                }
            }
            // The association is stopped for idleness (`idle/`): its
            // heartbeats stop with it, unless it was started again.
            Ok(false) => {
                if core.may_stop_heartbeats(&control) {
                    return;
                }
            }
            Err(e) => {
                // A heartbeat is 5 constant bytes: this cannot fail unless
                // the encoder is broken, and then no later one would go
                // either.
                tracing::error!(remote = %control.remote, "cannot queue a heartbeat: {e}; heartbeats stop");
                return;
            }
        }
    }
}
