//! The clock behind volley's timers: tokio's timer, or a [`ManualClock`]
//! that only a test moves.
//!
//! Everything volley delays (actor timers, receive timeouts) is armed
//! through `system.timer_driver()`, so that a system started with
//! [`Settings::manual_clock`](crate::Settings::manual_clock) runs all of it
//! on the manual clock; a new kind of delay (a backoff, say) should be
//! armed there too, or tests cannot drive it. On real time a timer is one
//! tokio task, as it would be without the seam: the choice costs one check
//! where a timer is armed (and one match in the receive timeout's
//! per-activation clock read), nothing per message. tokio's own paused
//! clock does not serve here: it jumps ahead by itself whenever the runtime
//! is idle.
//!
//! Ask timeouts and the pause of `ActorRef::send` stay on real time, so a
//! test on a manual clock cannot hang on an ask that is never answered.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::util::locks::lock;

/// A clock that stands still until [`ManualClock::advance`] moves it; for
/// tests (volley-testkit's `ManualTime` wraps it). Cheap to clone: clones
/// share one clock.
///
/// A timer armed on it fires when the clock is advanced past its deadline:
/// `advance` runs every timer that falls due, in deadline order (in the
/// order they were armed for equal deadlines), and returns once their
/// messages are in the mailboxes. The clock moves to each deadline as it
/// fires it, so a repeating timer fires once per interval that passed
/// (fixed rate and fixed delay behave the same: on this clock nothing is
/// ever late).
#[derive(Clone)]
pub struct ManualClock {
    shared: Arc<ClockShared>,
}

struct ClockShared {
    origin: Instant,
    /// Nanoseconds since `origin`; written under `state`, read without it.
    elapsed_ns: AtomicU64,
    state: Mutex<ClockState>,
}

type Once = Box<dyn FnOnce() + Send>;
/// Returns false when the timer is done (its actor has terminated).
type Every = Box<dyn FnMut() -> bool + Send>;

enum Action {
    Once(Once),
    Every(Duration, Every),
}

struct Pending {
    id: u64,
    action: Action,
}

#[derive(Default)]
struct ClockState {
    next_seq: u64,
    /// Keyed by (deadline, arming order): the order timers fire in.
    queue: BTreeMap<(Instant, u64), Pending>,
    /// Where each live timer is queued; `None` while its action runs.
    index: HashMap<u64, Option<(Instant, u64)>>,
}

impl ClockState {
    fn insert(&mut self, deadline: Instant, id: u64, action: Action) {
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.queue.insert(key, Pending { id, action });
        self.index.insert(id, Some(key));
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualClock {
    /// A clock standing at zero.
    pub fn new() -> Self {
        ManualClock {
            shared: Arc::new(ClockShared {
                origin: Instant::now(),
                elapsed_ns: AtomicU64::new(0),
                state: Mutex::new(ClockState::default()),
            }),
        }
    }

    /// How far the clock has been advanced since it was made.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.shared.elapsed_ns.load(Ordering::Acquire))
    }

    /// The clock's current instant.
    pub fn now(&self) -> Instant {
        self.shared.origin + self.elapsed()
    }

    /// How many timers are armed and have not fired yet (a repeating
    /// timer counts once).
    pub fn pending(&self) -> usize {
        lock(&self.shared.state).index.len()
    }

    /// How long until the next armed timer falls due; `None` if none is
    /// armed.
    pub fn next_due(&self) -> Option<Duration> {
        let state = lock(&self.shared.state);
        let (deadline, _) = state.queue.keys().next()?;
        Some(deadline.saturating_duration_since(self.now()))
    }

    /// Moves the clock forward by `by`, firing every timer that falls due
    /// meanwhile, in deadline order, on the calling thread. Returns once
    /// their messages are enqueued (the actors handle them afterwards, on
    /// their dispatchers). Timers that firing arms fire too, if they fall
    /// due within `by`.
    pub fn advance(&self, by: Duration) {
        let target = self.now() + by;
        loop {
            let due = {
                let mut state = lock(&self.shared.state);
                match state.queue.first_key_value() {
                    Some((&(deadline, _), _)) if deadline <= target => {
                        let (key, pending) = state.queue.pop_first().expect("just seen");
                        self.set_now(key.0);
                        match pending.action {
                            Action::Once(_) => {
                                state.index.remove(&pending.id);
                            }
                            Action::Every(..) => {
                                state.index.insert(pending.id, None);
                            }
                        }
                        Some((key.0, pending))
                    }
                    _ => {
                        self.set_now(target.max(self.now()));
                        None
                    }
                }
            };
            // Actions run without the lock: they may arm or cancel timers,
            // and dropping what they hold may drop an actor whose timers
            // cancel themselves.
            let Some((deadline, Pending { id, action })) = due else {
                return;
            };
            match action {
                Action::Once(f) => f(),
                Action::Every(interval, mut f) => {
                    let again = f();
                    let mut state = lock(&self.shared.state);
                    let live = matches!(state.index.get(&id), Some(None));
                    if again && live {
                        state.insert(deadline + interval, id, Action::Every(interval, f));
                    } else {
                        if live {
                            state.index.remove(&id);
                        }
                        drop(state);
                        drop(f);
                    }
                }
            }
        }
    }

    fn set_now(&self, now: Instant) {
        let ns = now.saturating_duration_since(self.shared.origin).as_nanos();
        self.shared
            .elapsed_ns
            .store(u64::try_from(ns).unwrap_or(u64::MAX), Ordering::Release);
    }

    fn arm(&self, delay: Duration, action: Action) -> TimerHandle {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let id = IDS.fetch_add(1, Ordering::Relaxed);
        let deadline = saturating_add(self.now(), delay);
        lock(&self.shared.state).insert(deadline, id, action);
        TimerHandle(HandleInner::Manual {
            clock: self.clone(),
            id,
        })
    }

    fn cancel(&self, id: u64) {
        let removed = {
            let mut state = lock(&self.shared.state);
            match state.index.remove(&id) {
                Some(Some(key)) => state.queue.remove(&key),
                _ => None,
            }
        };
        // Outside the lock: see `advance`.
        drop(removed);
    }
}

impl PartialEq for ManualClock {
    /// The same clock (clones of one another).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("elapsed", &self.elapsed())
            .field("pending", &self.pending())
            .finish()
    }
}

/// Cancels an armed timer; dropping it does not.
pub(crate) struct TimerHandle(HandleInner);

enum HandleInner {
    Task(AbortHandle),
    Manual { clock: ManualClock, id: u64 },
}

impl TimerHandle {
    pub(crate) fn cancel(&self) {
        match &self.0 {
            HandleInner::Task(task) => task.abort(),
            HandleInner::Manual { clock, id } => clock.cancel(*id),
        }
    }
}

/// Where a system's delays run: what every timer in volley arms through.
#[derive(Clone)]
pub(crate) enum TimerDriver {
    Tokio(Handle),
    Manual(ManualClock),
}

impl TimerDriver {
    /// The driver's idea of now, for timers that measure time themselves.
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        match self {
            TimerDriver::Tokio(_) => Instant::now(),
            TimerDriver::Manual(clock) => clock.now(),
        }
    }

    /// Runs `f` once after `delay`.
    pub(crate) fn after(&self, delay: Duration, f: impl FnOnce() + Send + 'static) -> TimerHandle {
        match self {
            TimerDriver::Tokio(runtime) => {
                let task = runtime.spawn(async move {
                    tokio::time::sleep(delay).await;
                    f();
                });
                TimerHandle(HandleInner::Task(task.abort_handle()))
            }
            TimerDriver::Manual(clock) => clock.arm(delay, Action::Once(Box::new(f))),
        }
    }

    /// Runs `f` after `initial`, then every `interval` until it returns
    /// false. `catch_up` (fixed rate) runs the calls a late runtime missed
    /// at once; otherwise (fixed delay) the next call is a whole interval
    /// after the late one.
    pub(crate) fn every(
        &self,
        initial: Duration,
        interval: Duration,
        catch_up: bool,
        mut f: impl FnMut() -> bool + Send + 'static,
    ) -> TimerHandle {
        // A zero interval would spin.
        let interval = interval.max(Duration::from_micros(1));
        match self {
            TimerDriver::Tokio(runtime) => {
                let missed = if catch_up {
                    tokio::time::MissedTickBehavior::Burst
                } else {
                    tokio::time::MissedTickBehavior::Delay
                };
                let task = runtime.spawn(async move {
                    let now = tokio::time::Instant::now().into_std();
                    let start = saturating_add(now, initial).into();
                    let mut ticks = tokio::time::interval_at(start, interval);
                    ticks.set_missed_tick_behavior(missed);
                    loop {
                        ticks.tick().await;
                        if !f() {
                            return;
                        }
                    }
                });
                TimerHandle(HandleInner::Task(task.abort_handle()))
            }
            TimerDriver::Manual(clock) => clock.arm(initial, Action::Every(interval, Box::new(f))),
        }
    }
}

/// `at + delay`, or a century later when that does not fit an `Instant`
/// (a delay of `Duration::MAX` means "never" in practice; adding it would
/// panic).
pub(crate) fn saturating_add(at: Instant, delay: Duration) -> Instant {
    at.checked_add(delay).unwrap_or_else(|| at + CENTURY)
}

/// What "for ever" is in practice: a hundred years.
pub(crate) const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn recorder() -> (Arc<Mutex<Vec<&'static str>>>, impl Fn(&'static str) + Clone) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        (log, move |s| lock(&l).push(s))
    }

    #[test]
    fn fires_due_timers_in_deadline_order_and_no_others() {
        let clock = ManualClock::new();
        let driver = TimerDriver::Manual(clock.clone());
        let (log, push) = recorder();
        let p = push.clone();
        let _late = driver.after(Duration::from_millis(30), move || p("30"));
        let p = push.clone();
        let _early = driver.after(Duration::from_millis(10), move || p("10"));
        let p = push.clone();
        let _never = driver.after(Duration::from_millis(50), move || p("50"));
        clock.advance(Duration::from_millis(9));
        assert!(lock(&log).is_empty());
        clock.advance(Duration::from_millis(31));
        assert_eq!(*lock(&log), ["10", "30"]);
        assert_eq!(clock.elapsed(), Duration::from_millis(40));
        assert_eq!(clock.pending(), 1);
        assert_eq!(clock.next_due(), Some(Duration::from_millis(10)));
    }

    #[test]
    fn a_cancelled_timer_does_not_fire() {
        let clock = ManualClock::new();
        let driver = TimerDriver::Manual(clock.clone());
        let (log, push) = recorder();
        let handle = driver.after(Duration::from_millis(5), move || push("fired"));
        handle.cancel();
        clock.advance(Duration::from_secs(1));
        assert!(lock(&log).is_empty());
        assert_eq!(clock.pending(), 0);
    }

    #[test]
    fn a_repeating_timer_fires_once_per_interval_until_it_says_stop() {
        let clock = ManualClock::new();
        let driver = TimerDriver::Manual(clock.clone());
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let _handle = driver.every(
            Duration::from_millis(100),
            Duration::from_millis(10),
            false,
            move || c.fetch_add(1, Ordering::SeqCst) < 4,
        );
        clock.advance(Duration::from_millis(99));
        assert_eq!(count.load(Ordering::SeqCst), 0);
        clock.advance(Duration::from_millis(21));
        assert_eq!(count.load(Ordering::SeqCst), 3, "at 100, 110 and 120 ms");
        clock.advance(Duration::from_secs(1));
        assert_eq!(count.load(Ordering::SeqCst), 5, "the fifth call ends it");
        assert_eq!(clock.pending(), 0);
    }

    #[test]
    fn a_timer_cancelled_by_its_own_action_stops_repeating() {
        let clock = ManualClock::new();
        let driver = TimerDriver::Manual(clock.clone());
        let count = Arc::new(AtomicUsize::new(0));
        let slot: Arc<Mutex<Option<TimerHandle>>> = Arc::default();
        let (c, s) = (count.clone(), slot.clone());
        let handle = driver.every(Duration::ZERO, Duration::from_millis(1), true, move || {
            c.fetch_add(1, Ordering::SeqCst);
            if let Some(h) = lock(&s).as_ref() {
                h.cancel();
            }
            true
        });
        *lock(&slot) = Some(handle);
        clock.advance(Duration::from_millis(10));
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert_eq!(clock.pending(), 0);
    }

    #[test]
    fn a_timer_armed_while_firing_fires_in_the_same_advance_when_due() {
        let clock = ManualClock::new();
        let driver = TimerDriver::Manual(clock.clone());
        let (log, push) = recorder();
        let inner = driver.clone();
        let keep: Arc<Mutex<Vec<TimerHandle>>> = Arc::default();
        let k = keep.clone();
        let _outer = driver.after(Duration::from_millis(10), move || {
            push("outer");
            let p = push.clone();
            lock(&k).push(inner.after(Duration::from_millis(10), move || p("inner")));
        });
        clock.advance(Duration::from_millis(25));
        assert_eq!(*lock(&log), ["outer", "inner"]);
    }
}
