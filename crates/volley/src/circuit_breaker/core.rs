//! The breaker's state machine, shared by every clone of a breaker and
//! every permit it hands out.
//!
//! The state and an epoch (bumped by every transition) share one atomic
//! word, so a call reads both with one load and the closed-state path
//! takes no lock: a permit in the closed state is that load and a clock
//! read; a success a load and a store, a failure a load and an add.
//! Transitions are rare and run under `transition`, which makes "exactly
//! one caller trips the breaker" and "exactly one timer (or late caller)
//! moves it to half-open" simple. Listeners are told after the lock is
//! released, so two transitions close together (the reset timer's turn
//! to half-open, and a trial failing at once on another thread) may be
//! heard in either order.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use super::settings::CircuitBreakerSettings;
use crate::time::clock::{TimerDriver, TimerHandle};
use crate::util::locks::{lock, read, write};

pub(super) const CLOSED: u64 = 0;
pub(super) const OPEN: u64 = 1;
pub(super) const HALF_OPEN: u64 = 2;
const STATE_BITS: u64 = 0b11;

/// The state of a breaker word.
#[inline]
pub(super) fn state_of(word: u64) -> u64 {
    word & STATE_BITS
}

pub(super) struct Core {
    pub(super) settings: CircuitBreakerSettings,
    pub(super) driver: TimerDriver,
    /// `epoch << 2 | state`.
    word: AtomicU64,
    failures: AtomicU32,
    /// In the half-open state: the trial call has not been handed out.
    trial_free: AtomicBool,
    /// When the current open period started and how long it lasts, in
    /// nanoseconds from `origin`; written before the word publishes OPEN.
    opened_at_ns: AtomicU64,
    open_for_ns: AtomicU64,
    origin: Instant,
    transition: Mutex<Transitions>,
    listeners: Listeners,
}

struct Transitions {
    /// The reset timeout the next open period lasts.
    next_reset_timeout: Duration,
    /// The timer that ends the current open period.
    reset_timer: Option<TimerHandle>,
}

impl Core {
    pub(super) fn new(settings: CircuitBreakerSettings, driver: TimerDriver) -> Arc<Self> {
        let origin = driver.now();
        Arc::new(Core {
            transition: Mutex::new(Transitions {
                next_reset_timeout: settings.reset_timeout(),
                reset_timer: None,
            }),
            settings,
            driver,
            word: AtomicU64::new(CLOSED),
            failures: AtomicU32::new(0),
            trial_free: AtomicBool::new(false),
            opened_at_ns: AtomicU64::new(0),
            open_for_ns: AtomicU64::new(0),
            origin,
            listeners: Listeners::default(),
        })
    }

    #[inline]
    pub(super) fn word(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    #[inline]
    pub(super) fn now(&self) -> Instant {
        self.driver.now()
    }

    pub(super) fn failure_count(&self) -> u32 {
        self.failures.load(Ordering::Acquire)
    }

    /// Takes the half-open state's single trial; false if it is taken.
    pub(super) fn take_trial(&self) -> bool {
        self.trial_free
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Gives the trial back, if the breaker is still in the half-open
    /// period (`word`) it was taken in: its call ended without an outcome.
    pub(super) fn return_trial(&self, word: u64) {
        if self.word() == word {
            self.trial_free.store(true, Ordering::Release);
        }
    }

    /// How much of the open period that `word` belongs to is left.
    pub(super) fn remaining_open(&self) -> Duration {
        let opened = Duration::from_nanos(self.opened_at_ns.load(Ordering::Acquire));
        let open_for = Duration::from_nanos(self.open_for_ns.load(Ordering::Acquire));
        let since = self.now().saturating_duration_since(self.origin);
        (opened + open_for).saturating_sub(since)
    }

    /// A call's success, counted if the breaker is still in the state (and
    /// period) the call started in, `word`.
    pub(super) fn succeeded(self: &Arc<Self>, word: u64) {
        if self.word() != word {
            return;
        }
        match state_of(word) {
            // Skips the store when there is nothing to reset, so that
            // successes do not bounce the counter's cache line.
            CLOSED if self.failures.load(Ordering::Relaxed) != 0 => {
                self.failures.store(0, Ordering::Release);
            }
            HALF_OPEN => self.transition(word, CLOSED),
            _ => {}
        }
    }

    /// A call's failure (or timeout), counted as [`Core::succeeded`] is.
    pub(super) fn failed(self: &Arc<Self>, word: u64) {
        if self.word() != word {
            return;
        }
        match state_of(word) {
            CLOSED => {
                let n = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
                if n >= self.settings.max_failures() {
                    self.transition(word, OPEN);
                }
            }
            HALF_OPEN => self.transition(word, OPEN),
            _ => {}
        }
    }

    /// Ends the open period `word` if it is still current: to half-open.
    pub(super) fn attempt_reset(self: &Arc<Self>, word: u64) {
        if state_of(word) == OPEN {
            self.transition(word, HALF_OPEN);
        }
    }

    /// Moves from `from` (state and epoch) to `to`, unless another
    /// transition got there first; then tells the listeners.
    fn transition(self: &Arc<Self>, from: u64, to: u64) {
        {
            let mut t = lock(&self.transition);
            if self.word() != from {
                return;
            }
            if let Some(timer) = t.reset_timer.take() {
                timer.cancel();
            }
            let next = ((from >> 2) + 1) << 2 | to;
            match to {
                CLOSED => {
                    self.failures.store(0, Ordering::Release);
                    t.next_reset_timeout = self.settings.reset_timeout();
                }
                HALF_OPEN => self.trial_free.store(true, Ordering::Release),
                _ => {
                    let open_for = t.next_reset_timeout;
                    let now = self.now().saturating_duration_since(self.origin);
                    self.opened_at_ns.store(nanos(now), Ordering::Release);
                    self.open_for_ns.store(nanos(open_for), Ordering::Release);
                    t.next_reset_timeout = self
                        .settings
                        .next_reset_timeout(open_for, crate::supervision::backoff::unit_random());
                    let weak: Weak<Core> = Arc::downgrade(self);
                    t.reset_timer = Some(self.driver.after(open_for, move || {
                        if let Some(core) = weak.upgrade() {
                            core.attempt_reset(next);
                        }
                    }));
                }
            }
            self.word.store(next, Ordering::Release);
        }
        let event = match to {
            CLOSED => Event::Close,
            HALF_OPEN => Event::HalfOpen,
            _ => Event::Open,
        };
        self.listeners.notify(event);
    }

    pub(super) fn notify(&self, event: Event) {
        self.listeners.notify(event);
    }

    pub(super) fn add_listener(&self, listener: Listener) {
        self.listeners.add(listener);
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What a listener is told.
#[derive(Clone, Copy)]
pub(super) enum Event {
    Open,
    HalfOpen,
    Close,
    CallSuccess(Duration),
    CallFailure(Duration),
    CallTimeout(Duration),
    CallBreakerOpen,
}

/// Which events a listener hears.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Open,
    HalfOpen,
    Close,
    CallSuccess,
    CallFailure,
    CallTimeout,
    CallBreakerOpen,
}

impl Kind {
    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl Event {
    fn kind(self) -> Kind {
        match self {
            Event::Open => Kind::Open,
            Event::HalfOpen => Kind::HalfOpen,
            Event::Close => Kind::Close,
            Event::CallSuccess(_) => Kind::CallSuccess,
            Event::CallFailure(_) => Kind::CallFailure,
            Event::CallTimeout(_) => Kind::CallTimeout,
            Event::CallBreakerOpen => Kind::CallBreakerOpen,
        }
    }
}

pub(super) type Listener = (Kind, Arc<dyn Fn(Event) + Send + Sync>);

/// Copy on write: a notification clones the list's `Arc` and runs it
/// without a lock, so a listener may register listeners.
#[derive(Default)]
struct Listeners {
    /// Which kinds have a listener: calls skip the lock when none does.
    mask: AtomicU8,
    list: RwLock<Arc<Vec<Listener>>>,
}

impl Listeners {
    fn add(&self, listener: Listener) {
        let mut list = write(&self.list);
        let mut next = Vec::clone(&list);
        self.mask.fetch_or(listener.0.bit(), Ordering::AcqRel);
        next.push(listener);
        *list = Arc::new(next);
    }

    fn notify(&self, event: Event) {
        let kind = event.kind();
        if self.mask.load(Ordering::Acquire) & kind.bit() == 0 {
            return;
        }
        let list = Arc::clone(&read(&self.list));
        for (k, f) in list.iter() {
            if *k == kind && catch_unwind(AssertUnwindSafe(|| f(event))).is_err() {
                tracing::error!("a circuit breaker listener panicked; the breaker carries on");
            }
        }
    }
}
