//! When a lane's writer task tries again after a failed connect, handshake
//! or write, and how loudly it says so.
//!
//! The pause doubles with each consecutive failure up to a ceiling, so a
//! peer that stays away for minutes costs a few attempts a minute rather
//! than five a second, and jitter (±20 %) keeps the lanes of many nodes that
//! lost the same peer from knocking in step. A completed handshake starts
//! the schedule again, and so does news of a new incarnation of the peer
//! ([`Redial`]): a pause in progress ends at once, because the peer that
//! just restarted is there now, and it judges this node from its first
//! contact (`liveness/reachability.rs`), so a lane still sleeping off the old
//! incarnation's outage would let it give this node up. The first failure
//! is a warning; after that one warning per lane per ten seconds says the
//! peer is still away, and the rest go to debug, so an outage does not
//! flood the log. Across all lanes the writer caps these warnings per
//! second (`outbound/writer.rs`), so thousands of associations failing at once do
//! not either.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::transport::settings::reconnect::jitter;
use crate::transport::settings::RemoteSettings;

/// The least time between two warnings of one lane about failed attempts.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// One lane's reconnect schedule.
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
    /// Consecutive failures since the last completed handshake.
    failures: u32,
    last_warning: Option<Instant>,
    /// The [`Redial`] count this schedule has taken into account.
    redials_seen: u64,
}

/// Tells a lane's writer that the peer has a new incarnation: the writer
/// dials at once, whatever pause it is in, and its schedule starts again.
#[derive(Default)]
pub(crate) struct Redial {
    count: AtomicU64,
    notify: Notify,
}

impl Redial {
    /// Ends the writer's pause now, or, if it is not pausing, its next one
    /// as soon as it begins, unless it connects before (that connection
    /// already reaches the new incarnation).
    pub(crate) fn now(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }
}

impl Backoff {
    pub(crate) fn new(settings: &RemoteSettings) -> Self {
        let first = settings.reconnect_backoff.max(Duration::from_millis(1));
        Backoff {
            first,
            max: settings.reconnect_backoff_max.max(first),
            failures: 0,
            last_warning: None,
            redials_seen: 0,
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
    /// A redial asked until now is taken care of by this connection.
    pub(crate) fn connected(&mut self, redial: &Redial) {
        self.failures = 0;
        self.redials_seen = redial.count();
    }

    /// Sleeps `pause`, unless `redial` asks for a new attempt now (or asked
    /// since the last connection): then the pause ends at once and the
    /// schedule starts again from the first delay.
    pub(crate) async fn sleep(&mut self, pause: Duration, redial: &Redial) {
        let asked = redial.notify.notified();
        tokio::pin!(asked);
        // Registered before the count is read: a redial in between is
        // seen either way.
        asked.as_mut().enable();
        if redial.count() == self.redials_seen {
            tokio::select! {
                () = tokio::time::sleep(pause) => return,
                () = asked => {}
            }
        }
        self.redials_seen = redial.count();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::settings::reconnect::reconnect_settings as settings;

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
        b.connected(&Redial::default());
        let pause = b.failed().as_millis() as u64;
        assert!(
            (160..=240).contains(&pause),
            "after a handshake: {pause} ms"
        );
    }

    /// A new incarnation of the peer ends the pause a lane is in, and the
    /// next failure waits the first delay again, not the ceiling.
    #[tokio::test]
    async fn a_redial_ends_the_pause_and_starts_the_schedule_again() {
        let redial = std::sync::Arc::new(Redial::default());
        let mut b = Backoff::new(&settings(200, 60_000));
        for _ in 0..12 {
            b.failed();
        }
        let pause = b.failed();
        assert!(pause >= Duration::from_secs(48), "{pause:?}");
        let asker = {
            let redial = redial.clone();
            tokio::spawn(async move { redial.now() })
        };
        tokio::time::timeout(Duration::from_secs(30), b.sleep(pause, &redial))
            .await
            .expect("the redial ends the pause");
        asker.await.unwrap();
        let next = b.failed().as_millis() as u64;
        assert!((160..=240).contains(&next), "after a redial: {next} ms");
    }

    /// A redial asked while the lane was not pausing (its connection was
    /// being dropped) ends the next pause at once; one asked before the
    /// lane's last connection was taken care of by that connection.
    #[tokio::test]
    async fn a_redial_asked_between_pauses_is_not_lost_and_not_replayed() {
        let redial = Redial::default();
        let mut b = Backoff::new(&settings(200, 60_000));
        redial.now();
        let long = Duration::from_secs(60);
        tokio::time::timeout(Duration::from_secs(30), b.sleep(long, &redial))
            .await
            .expect("a redial asked before the pause ends it");
        redial.now();
        b.connected(&redial);
        let slept = tokio::time::timeout(Duration::from_millis(300), b.sleep(long, &redial)).await;
        assert!(
            slept.is_err(),
            "a redial the connection took care of ended a later pause"
        );
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
