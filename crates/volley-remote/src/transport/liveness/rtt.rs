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

use std::time::{Duration, Instant};

use crate::transport::core::RemotingCore;
use crate::transport::support::lock;
use crate::wire::{Address, Lane};

/// At most this many round trips wait for the metrics monitor's next tick;
/// more would mean the monitor is not running.
const UNRECORDED_MAX: usize = 64;

/// Answers a heartbeat from `peer` on this node's own control connection
/// to it, if this node has an association with the peer that is up and
/// connected (`OutboundLane::send_heartbeat_ack` says when else not): an
/// ack never creates, starts or dials anything, so a peer cannot make this
/// node connect anywhere by sending heartbeats. Looked up per heartbeat
/// (once a second), not per connection, so an association made after the
/// peer's connection began answers too.
pub(crate) fn answer_heartbeat(core: &RemotingCore, peer: &Address) {
    let Some(association) = core.associations.find(peer) else {
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
pub(crate) fn ack_heard(core: &RemotingCore, peer: &Address) {
    if let Some(association) = core.associations.find(peer) {
        let keep = core.associations.is_metered();
        lock(&association.heartbeat_rtt).acked(Instant::now(), keep);
    }
}

/// One association's heartbeat round trips.
#[derive(Default)]
pub(crate) struct HeartbeatRtt {
    /// When the unanswered heartbeat was sent, if one is being timed.
    timing: Option<Instant>,
    /// A heartbeat went unanswered: the next ack is ambiguous.
    void: bool,
    latest: Option<Duration>,
    unrecorded: Vec<Duration>,
}

impl HeartbeatRtt {
    /// A heartbeat was queued at `at`.
    pub(crate) fn sent(&mut self, at: Instant) {
        if self.timing.is_some() || self.void {
            // The one before is unanswered: an ack now could answer
            // either. Time none until an ack settles it.
            self.timing = None;
            self.void = true;
        } else {
            self.timing = Some(at);
        }
    }

    /// An ack arrived at `at`; returns the round trip it completes, if it
    /// completes one. `keep` keeps it for the metrics monitor.
    pub(crate) fn acked(&mut self, at: Instant, keep: bool) -> Option<Duration> {
        if self.void {
            self.void = false;
            return None;
        }
        let rtt = at.saturating_duration_since(self.timing.take()?);
        self.latest = Some(rtt);
        if keep && self.unrecorded.len() < UNRECORDED_MAX {
            self.unrecorded.push(rtt);
        }
        Some(rtt)
    }

    /// The last round trip measured.
    pub(crate) fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// The round trips measured since the last call.
    pub(crate) fn take_unrecorded(&mut self) -> Vec<Duration> {
        std::mem::take(&mut self.unrecorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_answered_heartbeat_gives_its_round_trip_once() {
        let t0 = Instant::now();
        let mut r = HeartbeatRtt::default();
        r.sent(t0);
        assert_eq!(r.acked(t0 + ms(3), true), Some(ms(3)));
        assert_eq!(
            r.acked(t0 + ms(4), true),
            None,
            "a second ack times nothing"
        );
        assert_eq!(r.latest(), Some(ms(3)));
        assert_eq!(r.take_unrecorded(), vec![ms(3)]);
        assert!(r.take_unrecorded().is_empty());
    }

    #[test]
    fn an_unsolicited_ack_is_ignored() {
        let mut r = HeartbeatRtt::default();
        assert_eq!(r.acked(Instant::now(), true), None);
        assert_eq!(r.latest(), None);
    }

    #[test]
    fn an_unanswered_heartbeat_voids_the_next_measurement() {
        let t0 = Instant::now();
        let mut r = HeartbeatRtt::default();
        r.sent(t0);
        r.sent(t0 + ms(1000));
        // Late answer to the first, or quick answer to the second: unknown.
        assert_eq!(r.acked(t0 + ms(1200), true), None);
        assert_eq!(r.acked(t0 + ms(1210), true), None);
        r.sent(t0 + ms(2000));
        assert_eq!(r.acked(t0 + ms(2005), true), Some(ms(5)));
    }

    #[test]
    fn samples_wait_for_the_monitor_up_to_a_bound() {
        let t0 = Instant::now();
        let mut r = HeartbeatRtt::default();
        for i in 0..(UNRECORDED_MAX as u64 + 10) {
            r.sent(t0 + ms(i * 10));
            r.acked(t0 + ms(i * 10 + 1), true);
        }
        assert_eq!(r.take_unrecorded().len(), UNRECORDED_MAX);
        r.sent(t0);
        r.acked(t0 + ms(1), false);
        assert!(r.take_unrecorded().is_empty(), "not kept without metrics");
    }
}
