//! The system scheduler: Akka's `system.scheduler`, for work scheduled from
//! outside an actor.
//!
//! Actor timers (`Context::schedule_once` and friends, `timers.rs`) belong
//! to one actor: they are keyed, die with the actor's incarnation and
//! discard a tick already queued when cancelled. They are what an actor
//! should use for itself. The scheduler is the lower-level service Akka
//! also offers: it sends a message to any [`ActorRef`] or runs a closure
//! after a delay or repeatedly, from anywhere (a test, a `main`, an
//! extension), and hands back a [`Cancellable`]. It makes no promise about
//! a message already enqueued when it is cancelled: that message is an
//! ordinary message by then.
//!
//! Everything is armed through `system.timer_driver()`, as actor timers
//! are, so a system on a manual clock (volley-testkit's `ManualTime`) runs
//! scheduled work only when the test advances the clock; there even a zero
//! delay waits for an advance (`advance(Duration::ZERO)` runs it).
//!
//! The guarantees, and where they differ from Akka, are in
//! `docs/reference/timers.md#scheduler`. In short, following Pekko's
//! `Scheduler` and `LightArrayRevolverScheduler`: `cancel` is true only for
//! the call that cancelled a pending schedule; a repeating send to a
//! terminated actor stops itself (Pekko's `SchedulerException("timer
//! active for terminated actor")`); a zero interval is refused (Pekko's
//! `checkPeriod`: `IllegalArgumentException` for `<= 0`); a terminated
//! system refuses work (Pekko: `IllegalStateException`) and runs none
//! still pending; delays over [`Scheduler::MAX_DELAY`] are shortened to it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::actor::actor_ref::ActorRef;
use crate::system::actor_system::{ActorSystem, WeakSystem};
use crate::time::clock::{TimerDriver, TimerHandle};

/// Why the scheduler refused to schedule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    /// The system has terminated: nothing scheduled on it would run.
    #[error("cannot schedule on actor system {system}: it has terminated")]
    Terminated {
        /// The system's name.
        system: String,
    },
    /// A repeating schedule asked for a zero interval, which would spin.
    #[error("a repeating schedule needs an interval greater than zero")]
    ZeroInterval,
}

const PENDING: u8 = 0;
const DONE: u8 = 1;
const CANCELLED: u8 = 2;

struct State {
    status: AtomicU8,
    timer: OnceLock<TimerHandle>,
}

impl State {
    /// Ends the schedule unless it was cancelled: true if this call did.
    fn finish(&self) -> bool {
        self.status
            .compare_exchange(PENDING, DONE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn is_pending(&self) -> bool {
        self.status.load(Ordering::Acquire) == PENDING
    }
}

/// A handle to scheduled work (Akka's `Cancellable`). Cheap to clone:
/// clones control the same schedule. Dropping it does not cancel.
#[derive(Clone)]
pub struct Cancellable {
    state: Arc<State>,
}

impl Cancellable {
    /// Cancels the schedule: true if this call cancelled it, false if it
    /// had already run (a single schedule), stopped itself or been
    /// cancelled. A single schedule that this call cancels never runs; a
    /// repeating one runs no tick after this call returns, save one that
    /// was already running.
    pub fn cancel(&self) -> bool {
        let cancelled = self
            .state
            .status
            .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if cancelled {
            if let Some(timer) = self.state.timer.get() {
                timer.cancel();
            }
        }
        cancelled
    }

    /// True once a call to [`Cancellable::cancel`] has succeeded.
    pub fn is_cancelled(&self) -> bool {
        self.state.status.load(Ordering::Acquire) == CANCELLED
    }
}

impl std::fmt::Debug for Cancellable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = match self.state.status.load(Ordering::Acquire) {
            PENDING => "pending",
            DONE => "done",
            _ => "cancelled",
        };
        write!(f, "Cancellable({status})")
    }
}

impl ActorSystem {
    /// The system scheduler (Akka's `system.scheduler`).
    pub fn scheduler(&self) -> Scheduler {
        Scheduler::new(self)
    }
}

/// The system scheduler (Akka's `system.scheduler`), from
/// [`ActorSystem::scheduler`]: sends messages or runs closures after a
/// delay or repeatedly, from outside any actor. Cheap to clone. An actor
/// scheduling for itself should prefer its timers (`Context::schedule_once`
/// and friends), which end with it and discard cancelled ticks.
#[derive(Clone, Debug)]
pub struct Scheduler {
    system: ActorSystem,
}

impl Scheduler {
    /// The longest delay or interval the scheduler arms (a century); longer
    /// ones are shortened to it.
    pub const MAX_DELAY: Duration = crate::time::clock::CENTURY;

    fn new(system: &ActorSystem) -> Self {
        Scheduler {
            system: system.clone(),
        }
    }

    /// Sends `msg` to `target` once, after `delay` (Akka's
    /// `scheduleOnce(delay, receiver, message)`). A target that has
    /// terminated by then gets it as a dead letter, as any `tell`.
    pub fn schedule_once<M: Send + 'static>(
        &self,
        delay: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Result<Cancellable, SchedulerError> {
        let target = target.clone();
        self.schedule_once_fn(delay, move || target.tell(msg))
    }

    /// Runs `f` once, after `delay`, on the system's timer thread (a task
    /// of its runtime, or the thread advancing a manual clock): it should
    /// be short and must not block. A panic in `f` is logged.
    pub fn schedule_once_fn(
        &self,
        delay: Duration,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<Cancellable, SchedulerError> {
        let (driver, weak, state) = self.prepare()?;
        let s = state.clone();
        let timer = driver.after(delay.min(Self::MAX_DELAY), move || {
            if live(&weak) && s.finish() {
                guarded(f);
            }
        });
        Ok(armed(state, timer))
    }

    /// Sends a clone of `msg` to `target` after `initial`, then after each
    /// `delay` following the previous send (Akka's
    /// `scheduleWithFixedDelay`): a late runtime makes the sends fewer,
    /// never a burst. Stops itself once `target` has terminated.
    pub fn schedule_with_fixed_delay<M: Clone + Send + 'static>(
        &self,
        initial: Duration,
        delay: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Result<Cancellable, SchedulerError> {
        self.repeat(initial, delay, false, send_to(target, msg))
    }

    /// Sends a clone of `msg` to `target` after `initial`, then every
    /// `interval` measured from the first send (Akka's
    /// `scheduleAtFixedRate`): sends a late runtime missed are made up at
    /// once, so the count over time stays right. Stops itself once
    /// `target` has terminated.
    pub fn schedule_at_fixed_rate<M: Clone + Send + 'static>(
        &self,
        initial: Duration,
        interval: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Result<Cancellable, SchedulerError> {
        self.repeat(initial, interval, true, send_to(target, msg))
    }

    /// Runs `f` after `initial`, then after each `delay` following the
    /// previous run, as [`Scheduler::schedule_with_fixed_delay`]. A panic
    /// in `f` is logged and ends the schedule.
    pub fn schedule_with_fixed_delay_fn(
        &self,
        initial: Duration,
        delay: Duration,
        mut f: impl FnMut() + Send + 'static,
    ) -> Result<Cancellable, SchedulerError> {
        self.repeat(initial, delay, false, move || {
            f();
            true
        })
    }

    /// Runs `f` after `initial`, then every `interval`, as
    /// [`Scheduler::schedule_at_fixed_rate`]. A panic in `f` is logged and
    /// ends the schedule.
    pub fn schedule_at_fixed_rate_fn(
        &self,
        initial: Duration,
        interval: Duration,
        mut f: impl FnMut() + Send + 'static,
    ) -> Result<Cancellable, SchedulerError> {
        self.repeat(initial, interval, true, move || {
            f();
            true
        })
    }

    /// `tick` returns false when the schedule should stop itself.
    fn repeat(
        &self,
        initial: Duration,
        interval: Duration,
        catch_up: bool,
        mut tick: impl FnMut() -> bool + Send + 'static,
    ) -> Result<Cancellable, SchedulerError> {
        if interval.is_zero() {
            return Err(SchedulerError::ZeroInterval);
        }
        let (driver, weak, state) = self.prepare()?;
        let s = state.clone();
        let (initial, interval) = (initial.min(Self::MAX_DELAY), interval.min(Self::MAX_DELAY));
        let timer = driver.every(initial, interval, catch_up, move || {
            if !s.is_pending() {
                return false;
            }
            if !live(&weak) || !guarded(&mut tick).unwrap_or(false) {
                s.finish();
                return false;
            }
            true
        });
        Ok(armed(state, timer))
    }

    fn prepare(&self) -> Result<(TimerDriver, WeakSystem, Arc<State>), SchedulerError> {
        if self.system.is_terminated() {
            return Err(SchedulerError::Terminated {
                system: self.system.name().to_string(),
            });
        }
        let state = Arc::new(State {
            status: AtomicU8::new(PENDING),
            timer: OnceLock::new(),
        });
        Ok((self.system.timer_driver(), self.system.downgrade(), state))
    }
}

/// The tick of a repeating send: false once `target` has terminated.
fn send_to<M: Clone + Send + 'static>(
    target: &ActorRef<M>,
    msg: M,
) -> impl FnMut() -> bool + Send + 'static {
    let target = target.clone();
    move || {
        if target.is_terminated() {
            return false;
        }
        target.tell(msg.clone());
        true
    }
}

/// Pending work does not run once its system has terminated (nor keeps
/// the system alive).
fn live(system: &WeakSystem) -> bool {
    system.upgrade().is_some_and(|s| !s.is_terminated())
}

/// Runs `f`, logging a panic instead of unwinding into the timer driver.
fn guarded<R>(f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(panic) => {
            let panic = crate::util::panic::panic_text(panic.as_ref());
            tracing::error!(panic, "scheduled task panicked");
            None
        }
    }
}

fn armed(state: Arc<State>, timer: TimerHandle) -> Cancellable {
    // Nobody can cancel before this: the handle is not out yet.
    let _ = state.timer.set(timer);
    Cancellable { state }
}
