//! [`ManualTime`]: timers that fire when the test says so.

use std::time::{Duration, Instant};

use volley::time::ManualClock;
use volley::Settings;

use crate::wait::{blocking, default_timeout};

/// A clock the test advances by hand, driving every timer of the systems
/// started with [`ManualTime::settings`]: `ctx.schedule_once`, fixed-rate
/// and fixed-delay timers, receive timeouts (Akka's `ManualTime`). Nothing
/// sleeps: a test of a one-hour timer takes microseconds.
///
/// [`ManualTime::advance`] fires the timers that fall due, in deadline
/// order, and returns once their messages are in the actors' mailboxes. The
/// actors handle them afterwards, on their dispatchers, so to see a reaction
/// wait for it on a probe. The same holds the other way: an actor arms a
/// timer when it handles a message (or in `pre_start`), and a timer armed
/// after an `advance` counts from the time it was armed. Let the actor
/// confirm what it did (a reply to a probe), or use
/// [`ManualTime::wait_for_timers`], before advancing.
///
/// To show that a timer has *not* fired, advance and then send the actor a
/// message that it answers: advancing enqueues a due timer's message before
/// it returns, so if the answer comes first, nothing fired.
///
/// Ask timeouts, probe timeouts and `within` stay on real time, so a test
/// cannot hang on a clock nobody advances.
#[derive(Debug, Clone, Default)]
pub struct ManualTime {
    clock: ManualClock,
}

impl ManualTime {
    /// A clock standing at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// `settings` with this clock driving the system's timers; start the
    /// system with them (any constructor, any dispatcher kind).
    pub fn settings(&self, settings: Settings) -> Settings {
        Settings {
            manual_clock: Some(self.clock.clone()),
            ..settings
        }
    }

    /// The clock itself, for `Settings::manual_clock`.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Moves time forward by `d`, firing every timer that falls due, in
    /// deadline order; returns once their messages are enqueued.
    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    /// How far time has been advanced.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Timers armed and not fired yet (a repeating timer counts once).
    pub fn pending_timers(&self) -> usize {
        self.clock.pending()
    }

    /// Time until the next armed timer falls due.
    pub fn next_due(&self) -> Option<Duration> {
        self.clock.next_due()
    }

    /// Waits (in real time, at most the default timeout) until at least
    /// `n` timers are armed: e.g. until an actor's `pre_start` has armed
    /// its timer. Panics if they are not.
    #[track_caller]
    pub fn wait_for_timers(&self, n: usize) {
        let deadline = Instant::now() + default_timeout();
        let armed = blocking(|| loop {
            let armed = self.clock.pending();
            if armed >= n || Instant::now() >= deadline {
                return armed;
            }
            // Actors arm timers on other threads, which say nothing when
            // they do; polling is the plain way to wait for them.
            std::thread::sleep(Duration::from_millis(1));
        });
        assert!(
            armed >= n,
            "expected {n} armed timers, found {armed} after {:?}",
            default_timeout()
        );
    }
}
