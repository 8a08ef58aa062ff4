//! When a lane's writer task tries again after a failed connect, handshake
//! or write, and how loudly it says so.
//!
//! The pause doubles with each consecutive failure up to a ceiling, so a
//! peer that stays away for minutes costs a few attempts a minute rather
//! than five a second, and jitter (±20 %) keeps the lanes of many nodes that
//! lost the same peer from knocking in step. A completed handshake starts
//! the schedule again. The first failure is a warning; after that one
//! warning per lane per ten seconds says the peer is still away, and the
//! rest go to debug, so an outage does not flood the log. Across all
//! lanes the writer caps these warnings per second (`writer.rs`), so
//! thousands of associations failing at once do not either.

use std::time::{Duration, Instant};

use super::settings::RemoteSettings;

/// The least time between two warnings of one lane about failed attempts.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// One lane's reconnect schedule.
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
    /// Consecutive failures since the last completed handshake.
    failures: u32,
    last_warning: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(settings: &RemoteSettings) -> Self {
        let first = Duration::from_millis(settings.reconnect_backoff_ms.max(1));
        Backoff {
            first,
            max: Duration::from_millis(settings.reconnect_backoff_max_ms).max(first),
            failures: 0,
            last_warning: None,
        }
    }

    /// Counts a failure and returns the pause before the next attempt: the
    /// first delay after the first failure, doubling from there up to the
    /// ceiling, each ±20 %.
    pub(crate) fn failed(&mut self) -> Duration {
        let doubled = self.first.saturating_mul(1 << self.failures.min(16));
        self.failures = self.failures.saturating_add(1);
        jitter(doubled.min(self.max), volley::remote::random_uid())
    }

    /// A handshake completed: the next failure waits the first delay again.
    pub(crate) fn connected(&mut self) {
        self.failures = 0;
    }

    /// Whether the failure being reported deserves a warning (the first of
    /// this lane, then at most one per [`WARN_EVERY`]) or only a debug line.
    pub(crate) fn should_warn(&mut self) -> bool {
        let now = Instant::now();
        let due = self
            .last_warning
            .is_none_or(|last| now.duration_since(last) >= WARN_EVERY);
        if due {
            self.last_warning = Some(now);
        }
        due
    }
}

/// `base` scaled by a factor between 0.8 and 1.2 taken from `random`.
fn jitter(base: Duration, random: u64) -> Duration {
    let per_mille = 800 + random % 401;
    base.saturating_mul(per_mille as u32) / 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(first: u64, max: u64) -> RemoteSettings {
        RemoteSettings {
            reconnect_backoff_ms: first,
            reconnect_backoff_max_ms: max,
            ..RemoteSettings::default()
        }
    }

    #[test]
    fn the_pause_doubles_up_to_the_ceiling_within_the_jitter() {
        let mut b = Backoff::new(&settings(200, 5000));
        let mut expected = 200u64;
        for _ in 0..10 {
            let pause = b.failed().as_millis() as u64;
            assert!(
                (expected * 8 / 10..=expected * 12 / 10).contains(&pause),
                "{pause} ms for a base of {expected} ms"
            );
            expected = (expected * 2).min(5000);
        }
        b.connected();
        let pause = b.failed().as_millis() as u64;
        assert!(
            (160..=240).contains(&pause),
            "after a handshake: {pause} ms"
        );
    }

    #[test]
    fn jitter_spans_both_sides() {
        let base = Duration::from_millis(1000);
        assert_eq!(jitter(base, 0), Duration::from_millis(800));
        assert_eq!(jitter(base, 400), Duration::from_millis(1200));
        assert_eq!(jitter(base, 200), base);
    }

    #[test]
    fn only_the_first_failure_in_ten_seconds_warns() {
        let mut b = Backoff::new(&settings(200, 5000));
        assert!(b.should_warn());
        assert!(!b.should_warn());
        b.last_warning = Instant::now().checked_sub(WARN_EVERY);
        assert!(b.should_warn());
        assert!(!b.should_warn());
    }
}
