//! Supervision: what a parent does when a child fails.
//!
//! As in Akka classic, the parent's [`SupervisorStrategy`] decides: its
//! decider maps the failure to a [`Directive`], and a restart limit (at most
//! N restarts within a window) turns a restart into a stop once exceeded.
//! A backoff ([`SupervisorStrategy::restart_with_backoff`]) delays each
//! restart, longer for each consecutive one (see `backoff`).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Failure, FailureKind};
use crate::supervision::backoff::{BackoffOptions, BackoffState};

/// What to do with a failed child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    /// Keep the actor and its state; drop the failing message and carry on.
    Resume,
    /// Replace the actor with a fresh instance from its props. The mailbox
    /// and the `ActorRef` are kept; no queued message is lost.
    Restart,
    /// Stop the actor.
    Stop,
    /// Fail the supervisor itself with this failure, for its own parent to
    /// decide.
    Escalate,
}

type Decider = Arc<dyn Fn(&Failure) -> Directive + Send + Sync>;

/// How a parent supervises its children.
#[derive(Clone)]
pub struct SupervisorStrategy {
    all_for_one: bool,
    max_restarts: Option<u32>,
    within: Option<Duration>,
    decider: Decider,
    backoff: Option<Arc<BackoffOptions>>,
}

impl Default for SupervisorStrategy {
    /// One-for-one, the default decider, no restart limit: Akka's default.
    fn default() -> Self {
        SupervisorStrategy::one_for_one()
    }
}

impl fmt::Debug for SupervisorStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorStrategy")
            .field("all_for_one", &self.all_for_one)
            .field("max_restarts", &self.max_restarts)
            .field("within", &self.within)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl SupervisorStrategy {
    /// The directive applies to the failed child only.
    pub fn one_for_one() -> Self {
        SupervisorStrategy {
            all_for_one: false,
            max_restarts: None,
            within: None,
            decider: Arc::new(Self::default_decider),
            backoff: None,
        }
    }

    /// The directive applies to all children of the supervisor.
    pub fn all_for_one() -> Self {
        SupervisorStrategy {
            all_for_one: true,
            ..Self::one_for_one()
        }
    }

    /// Stops any failing child (Akka's `stoppingStrategy`).
    pub fn stopping() -> Self {
        Self::one_for_one().with_decider(|_| Directive::Stop)
    }

    /// Restarts a failed child after a delay that doubles with each
    /// consecutive restart, from `min` up to `max`, stretched by a random
    /// share of up to `random_factor` (see [`BackoffOptions::new`]; Akka
    /// typed's `restartWithBackoff`). One-for-one, and the decider restarts
    /// on every failure, a failed `pre_start` included, as Akka typed's
    /// does. The failed instance's `pre_restart` runs at once; the new
    /// instance is created, and `post_restart` runs, once the delay has
    /// passed. Meanwhile the child is suspended and keeps the messages that
    /// arrive, up to [`Self::with_backoff_stash_capacity`]. Given to a
    /// [`BackoffSupervisor`](crate::BackoffSupervisor), it makes the
    /// supervisor restart on failure, count the restarts and stop past the
    /// limit (classic's `BackoffOpts.onFailure`).
    pub fn restart_with_backoff(min: Duration, max: Duration, random_factor: f64) -> Self {
        Self::one_for_one()
            .with_decider(|_| Directive::Restart)
            .with_backoff(BackoffOptions::new(min, max, random_factor))
    }

    /// Delays every restart this strategy decides as `options` say.
    pub fn with_backoff(mut self, options: BackoffOptions) -> Self {
        self.backoff = Some(Arc::new(options));
        self
    }

    /// The backoff, if restarts are delayed.
    pub fn backoff(&self) -> Option<&BackoffOptions> {
        self.backoff.as_deref()
    }

    fn map_backoff(mut self, f: impl FnOnce(BackoffOptions) -> BackoffOptions) -> Self {
        if let Some(backoff) = self.backoff.take() {
            self.backoff = Some(Arc::new(f(Arc::unwrap_or_clone(backoff))));
        }
        self
    }

    /// Starts the backoff over once the child has run for `after` since its
    /// last restart (default: the mean of the minimum and maximum delay).
    /// No effect without a backoff.
    pub fn with_reset_backoff_after(self, after: Duration) -> Self {
        self.map_backoff(|b| b.with_reset_backoff_after(after))
    }

    /// At most `max` consecutive backoff restarts (counted since the backoff
    /// last started over); the child is stopped instead of the next one
    /// (Akka typed's `withMaxRestarts`), and a
    /// [`BackoffSupervisor`](crate::BackoffSupervisor) stops with it. No
    /// effect without a backoff.
    pub fn with_backoff_max_restarts(self, max: u32) -> Self {
        self.map_backoff(|b| b.with_max_restarts(max))
    }

    /// The most messages a child waiting for its backoff restart keeps
    /// (default [`DEFAULT_STASH_CAPACITY`](crate::DEFAULT_STASH_CAPACITY));
    /// past it they go to dead letters as
    /// [`BackoffOverflow`](crate::DeadLetterReason::BackoffOverflow), and 0
    /// sends them there at once (Akka typed's `withStashCapacity`). No
    /// effect without a backoff.
    pub fn with_backoff_stash_capacity(self, capacity: usize) -> Self {
        self.map_backoff(|b| b.with_stash_capacity(capacity))
    }

    /// At most `max` restarts within `within`; one more failure that asks for
    /// a restart stops the child instead. The window starts at the first
    /// restart and starts over once it has passed.
    pub fn with_max_restarts(mut self, max: u32, within: Duration) -> Self {
        self.max_restarts = Some(max);
        self.within = Some(within);
        self
    }

    /// At most `max` restarts in the child's whole life.
    pub fn with_max_restarts_total(mut self, max: u32) -> Self {
        self.max_restarts = Some(max);
        self.within = None;
        self
    }

    /// Replaces the decider. A decider that panics fails the supervisor
    /// itself (see [`Actor::supervisor_strategy`](crate::Actor::supervisor_strategy)).
    pub fn with_decider(
        mut self,
        decider: impl Fn(&Failure) -> Directive + Send + Sync + 'static,
    ) -> Self {
        self.decider = Arc::new(decider);
        self
    }

    /// Akka's default: a failure to start and an unhandled `Terminated` stop
    /// the child; anything else restarts it.
    pub fn default_decider(failure: &Failure) -> Directive {
        match failure.kind {
            FailureKind::Initialization(_) | FailureKind::DeathPact(_) => Directive::Stop,
            _ => Directive::Restart,
        }
    }

    /// True for all-for-one.
    pub fn is_all_for_one(&self) -> bool {
        self.all_for_one
    }

    pub(crate) fn decide(&self, failure: &Failure) -> Directive {
        (self.decider)(failure)
    }

    /// Records a restart request: at once, after a backoff, or refused by a
    /// limit. `now` reads the system's timer clock, and only for a backoff.
    pub(crate) fn plan_restart(
        &self,
        stats: &mut RestartStats,
        now: impl FnOnce() -> Instant,
    ) -> RestartPlan {
        if !self.permit_restart(stats) {
            return RestartPlan::Refused;
        }
        let Some(backoff) = &self.backoff else {
            return RestartPlan::Now;
        };
        let state = stats.backoff.get_or_insert_with(Box::default);
        match backoff.next(state, now()) {
            Some(delay) => RestartPlan::After {
                delay,
                stash_capacity: backoff.stash_capacity(),
            },
            None => RestartPlan::Refused,
        }
    }

    /// Records a restart request; false once the limit is exceeded.
    pub(crate) fn permit_restart(&self, stats: &mut RestartStats) -> bool {
        let Some(max) = self.max_restarts else {
            return true;
        };
        let now = Instant::now();
        if let Some(window) = self.within {
            match stats.window_start {
                Some(start) if now.duration_since(start) <= window => {}
                _ => {
                    stats.window_start = Some(now);
                    stats.count = 0;
                }
            }
        }
        stats.count += 1;
        stats.count <= max
    }
}

/// Restart bookkeeping for one child.
#[derive(Debug, Default, Clone)]
pub(crate) struct RestartStats {
    count: u32,
    window_start: Option<Instant>,
    /// Boxed on first use: every child has these stats, few back off.
    backoff: Option<Box<BackoffState>>,
}

impl RestartStats {
    /// The backoff's count and timing, once a backoff restart was counted.
    pub(crate) fn backoff_mut(&mut self) -> Option<&mut BackoffState> {
        self.backoff.as_deref_mut()
    }
}

/// What a restart request comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestartPlan {
    /// Restart now.
    Now,
    /// Restart once `delay` has passed, keeping at most `stash_capacity`
    /// messages meanwhile.
    After {
        delay: Duration,
        stash_capacity: usize,
    },
    /// A limit is reached: stop the child instead.
    Refused,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_by_default() {
        let s = SupervisorStrategy::default();
        let mut stats = RestartStats::default();
        assert!((0..1000).all(|_| s.permit_restart(&mut stats)));
    }

    #[test]
    fn limit_within_window() {
        let s = SupervisorStrategy::one_for_one().with_max_restarts(2, Duration::from_secs(60));
        let mut stats = RestartStats::default();
        assert!(s.permit_restart(&mut stats));
        assert!(s.permit_restart(&mut stats));
        assert!(!s.permit_restart(&mut stats));
    }

    #[test]
    fn window_starts_over() {
        let s = SupervisorStrategy::one_for_one().with_max_restarts(1, Duration::from_millis(1));
        let mut stats = RestartStats::default();
        assert!(s.permit_restart(&mut stats));
        std::thread::sleep(Duration::from_millis(5));
        assert!(s.permit_restart(&mut stats));
    }
}
