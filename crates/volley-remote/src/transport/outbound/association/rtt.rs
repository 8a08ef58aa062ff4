//! One association's heartbeat round trips, as `liveness/rtt.rs` times
//! them and the monitor's metrics sampler takes them.

use std::time::{Duration, Instant};

/// At most this many round trips wait for the metrics monitor's next tick;
/// more would mean the monitor is not running.
const UNRECORDED_MAX: usize = 64;

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
