//! Backoff: restarting a child after a delay that grows with each
//! consecutive restart (Akka's `BackoffSupervisor` and typed
//! `SupervisorStrategy.restartWithBackoff`), and counting those restarts.
//!
//! The delays are armed on the system's timer driver, so a system on a
//! manual clock (volley-testkit's `ManualTime`) runs them when the test
//! advances it.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::actor::definition::DEFAULT_STASH_CAPACITY;
use crate::error::Failure;
use crate::supervision::strategy::SupervisorStrategy;

/// How a backoff grows, when it starts over, how many restarts it allows,
/// and what happens to the messages that arrive while the child waits.
///
/// Used by [`SupervisorStrategy::restart_with_backoff`] (a failed child is
/// restarted after the delay) and by
/// [`BackoffSupervisor`](crate::BackoffSupervisor) (a stopped child is
/// created again after the delay, or, with [`BackoffOptions::on_failure`],
/// a failed child is restarted after it).
#[derive(Clone)]
pub struct BackoffOptions {
    min: Duration,
    max: Duration,
    random_factor: f64,
    /// Set by `with_reset_backoff_after`; `None` means `default_reset`.
    /// Kept apart so that a supervisor merging two sets of options can
    /// tell which period the user chose.
    reset_after: Option<Duration>,
    default_reset: Duration,
    max_restarts: Option<u32>,
    stash_capacity: usize,
    child_strategy: Option<SupervisorStrategy>,
    /// A `BackoffSupervisor` with these options restarts its child on
    /// failure rather than re-creating it on stop.
    on_failure: bool,
}

impl fmt::Debug for BackoffOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackoffOptions")
            .field("min", &self.min)
            .field("max", &self.max)
            .field("random_factor", &self.random_factor)
            .field("reset_after", &self.reset_backoff_after())
            .field("max_restarts", &self.max_restarts)
            .field("stash_capacity", &self.stash_capacity)
            .field("on_failure", &self.on_failure)
            .finish_non_exhaustive()
    }
}

impl BackoffOptions {
    /// The n-th consecutive restart (counting from 0) waits
    /// `min(max, min * 2^n) * (1 + r)`, `r` drawn uniformly from
    /// `[0, random_factor]` (negative and non-finite factors count as 0;
    /// a `max` below `min` counts as `min`).
    /// The backoff starts over once the child has run for
    /// `(min + max) / 2` without failing (Akka typed's default); no limit
    /// on restarts; up to [`DEFAULT_STASH_CAPACITY`] messages are kept
    /// while the child waits.
    pub fn new(min: Duration, max: Duration, random_factor: f64) -> Self {
        let max = max.max(min);
        let random_factor = if random_factor.is_finite() {
            random_factor.max(0.0)
        } else {
            0.0
        };
        BackoffOptions {
            min,
            max,
            random_factor,
            reset_after: None,
            default_reset: (min + max) / 2,
            max_restarts: None,
            stash_capacity: DEFAULT_STASH_CAPACITY,
            child_strategy: None,
            on_failure: false,
        }
    }

    /// Options for a [`BackoffSupervisor`](crate::BackoffSupervisor) that
    /// re-creates a child that stopped (Akka's `BackoffOpts.onStop`): as
    /// [`BackoffOptions::new`], except that the backoff starts over once
    /// the child has run for `min` (Akka classic's default auto reset).
    pub fn on_stop(min: Duration, max: Duration, random_factor: f64) -> Self {
        let mut options = Self::new(min, max, random_factor);
        options.default_reset = options.min;
        options
    }

    /// Options for a [`BackoffSupervisor`](crate::BackoffSupervisor) that
    /// restarts a failed child after the delay (Akka's
    /// `BackoffOpts.onFailure`): the supervisor counts each restart
    /// (`GetRestartCount`), starts the count over once the child has run
    /// for `min` (or [`Self::with_reset_backoff_after`]), and stops itself
    /// and the child past [`Self::with_max_restarts`], or when the child
    /// stops for any other reason. The child's failures are decided by
    /// [`Self::with_supervisor_strategy`] (default: the default decider);
    /// each `Restart` it decides waits out the backoff.
    pub fn on_failure(min: Duration, max: Duration, random_factor: f64) -> Self {
        let mut options = Self::on_stop(min, max, random_factor);
        options.on_failure = true;
        options
    }

    /// Starts the backoff over (the next restart waits `min` again) once
    /// the child has run this long since its last restart.
    pub fn with_reset_backoff_after(mut self, after: Duration) -> Self {
        self.reset_after = Some(after);
        self
    }

    /// At most `max` consecutive restarts (counted since the backoff last
    /// started over); the child is stopped instead of the next one. A
    /// [`BackoffSupervisor`](crate::BackoffSupervisor) stops itself then.
    pub fn with_max_restarts(mut self, max: u32) -> Self {
        self.max_restarts = Some(max);
        self
    }

    /// Keeps at most `capacity` messages while the child waits for its
    /// restart; those past it go to dead letters with
    /// [`DeadLetterReason::BackoffOverflow`](crate::DeadLetterReason::BackoffOverflow).
    /// 0 sends every message that arrives meanwhile to dead letters at
    /// once.
    pub fn with_stash_capacity(mut self, capacity: usize) -> Self {
        self.stash_capacity = capacity;
        self
    }

    /// For a [`BackoffSupervisor`](crate::BackoffSupervisor): how it
    /// supervises its child's failures (Akka's `withSupervisorStrategy`).
    /// Default: the default strategy. On stop, a failure it restarts is
    /// restarted at once, and one it stops hands the child to the backoff.
    /// On failure ([`Self::on_failure`]), a failure it restarts is
    /// restarted after the backoff. A strategy that carries a backoff of
    /// its own ([`SupervisorStrategy::restart_with_backoff`]) makes the
    /// supervisor restart on failure as well: see
    /// [`BackoffSupervisor`](crate::BackoffSupervisor) for which options
    /// then apply.
    pub fn with_supervisor_strategy(mut self, strategy: SupervisorStrategy) -> Self {
        self.child_strategy = Some(strategy);
        self
    }

    /// The shortest delay.
    pub fn min_backoff(&self) -> Duration {
        self.min
    }

    /// The longest delay before the random factor.
    pub fn max_backoff(&self) -> Duration {
        self.max
    }

    /// How long the child must run for the backoff to start over.
    pub fn reset_backoff_after(&self) -> Duration {
        self.reset_after.unwrap_or(self.default_reset)
    }

    /// The limit on consecutive restarts, if any.
    pub fn max_restarts(&self) -> Option<u32> {
        self.max_restarts
    }

    /// How many messages are kept while the child waits.
    pub fn stash_capacity(&self) -> usize {
        self.stash_capacity
    }

    pub(crate) fn child_strategy(&self) -> SupervisorStrategy {
        self.child_strategy.clone().unwrap_or_default()
    }

    /// For a `BackoffSupervisor`: the backoff its child's failures are
    /// restarted with, or `None` if it re-creates a stopped child instead.
    /// A backoff on the child strategy gives the delays and the stash
    /// capacity; both restart limits apply (the lower wins); the reset
    /// period is the one set on these options, else the one set on the
    /// strategy, else the strategy's `min` (Akka classic's default).
    pub(crate) fn failure_backoff(&self) -> Option<BackoffOptions> {
        let from_strategy = self.child_strategy.as_ref().and_then(|s| s.backoff());
        let mut backoff = match from_strategy {
            Some(strategy) => BackoffOptions {
                reset_after: self.reset_after.or(strategy.reset_after),
                default_reset: strategy.min,
                max_restarts: lower_limit(self.max_restarts, strategy.max_restarts),
                ..strategy.clone()
            },
            None if self.on_failure => self.clone(),
            None => return None,
        };
        backoff.on_failure = true;
        backoff.child_strategy = None;
        Some(backoff)
    }

    /// The delay before restart number `restart` (0 for the first after
    /// the backoff started over), with a fresh random draw.
    pub fn delay(&self, restart: u32) -> Duration {
        let base = 2u32
            .checked_pow(restart)
            .and_then(|factor| self.min.checked_mul(factor))
            .map_or(self.max, |d| d.min(self.max));
        if self.random_factor == 0.0 {
            return base;
        }
        let factor = 1.0 + unit_random() * self.random_factor;
        // Past what a Duration holds: the longest one, rather than a panic.
        Duration::try_from_secs_f64(base.as_secs_f64() * factor).unwrap_or(Duration::MAX)
    }

    /// The consecutive restarts counted in `state`, started over first if
    /// the child has run for the reset period since the last one. Checked
    /// whenever the count is read, so nothing is scheduled for the reset.
    pub(crate) fn restarts(&self, state: &mut BackoffState, now: Instant) -> u32 {
        let reset_after = self.reset_backoff_after();
        if state
            .restarted_at
            .is_some_and(|at| now.saturating_duration_since(at) >= reset_after)
        {
            state.restarts = 0;
        }
        state.restarts
    }

    /// Counts a restart: its delay, or `None` if the limit is reached.
    pub(crate) fn next(&self, state: &mut BackoffState, now: Instant) -> Option<Duration> {
        let restarts = self.restarts(state, now);
        if self.max_restarts.is_some_and(|max| restarts >= max) {
            return None;
        }
        let delay = self.delay(restarts);
        state.restarts = restarts.saturating_add(1);
        // The child runs again from the end of the delay: healthy running
        // is measured from there.
        state.restarted_at = Some(now.checked_add(delay).unwrap_or(now));
        Some(delay)
    }
}

/// The lower of two optional limits; no limit only if neither is set.
fn lower_limit(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One child's backoff: consecutive restarts and when the last one ran.
#[derive(Debug, Default, Clone)]
pub(crate) struct BackoffState {
    pub(crate) restarts: u32,
    pub(crate) restarted_at: Option<Instant>,
}

/// A restart directive that waits: sent to the child, which runs
/// `pre_restart` at once and creates the new instance after `delay`.
pub(crate) struct BackoffRestart {
    pub(crate) failure: Arc<Failure>,
    pub(crate) delay: Duration,
    pub(crate) stash_capacity: usize,
}

/// A draw from `[0, 1)`. Only restarts and circuit breakers that open
/// draw, so a fresh std hasher (random keys per process, a counter per
/// call) is randomness enough, without a dependency.
pub(crate) fn unit_random() -> f64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// BackoffSupervisorSpec "correctly calculate the delay".
    #[test]
    fn delay_table() {
        let m = |n: u64| Duration::from_secs(60 * n);
        let day = |n: u64| Duration::from_secs(86_400 * n);
        let cases = [
            (0, m(0), m(0), m(0)),
            (0, m(5), m(7), m(5)),
            (2, S(5), S(7), S(7)),
            (2, S(5), day(7), S(20)),
            (29, m(5), m(10), m(10)),
            (29, day(10_000), day(10_000), day(10_000)),
            (u32::MAX, day(10_000), day(10_000), day(10_000)),
        ];
        for (n, min, max, expected) in cases {
            assert_eq!(
                BackoffOptions::new(min, max, 0.0).delay(n),
                expected,
                "{n} {min:?} {max:?}"
            );
        }
    }

    #[test]
    fn random_factor_stretches_within_bounds() {
        let b = BackoffOptions::new(S(1), S(10), 0.5);
        let delays: Vec<Duration> = (0..200).map(|_| b.delay(0)).collect();
        assert!(delays
            .iter()
            .all(|d| *d >= S(1) && *d <= Duration::from_millis(1500)));
        assert!(delays.iter().any(|d| *d != delays[0]), "no randomness");
    }

    /// SupervisionSpec "default resetBackoffAfter to average of min and max
    /// backoff".
    #[test]
    fn default_reset_is_the_average() {
        let b = BackoffOptions::new(Duration::from_millis(100), S(1), 0.0);
        assert_eq!(b.reset_backoff_after(), Duration::from_millis(550));
    }

    /// Which settings a `BackoffSupervisor` restarting on failure uses when
    /// both its options and its child strategy carry a backoff.
    #[test]
    fn failure_backoff_merges_the_strategy_backoff() {
        let strategy = SupervisorStrategy::restart_with_backoff(S(1), S(10), 0.0);
        let summary = |o: BackoffOptions| {
            let b = o.failure_backoff().expect("restarts on failure");
            (b.min_backoff(), b.max_restarts(), b.reset_backoff_after())
        };
        let on_stop = BackoffOptions::on_stop(S(2), S(20), 0.0);
        // The strategy's delays; nothing else set: no limit, reset at min.
        let plain = on_stop.clone().with_supervisor_strategy(strategy.clone());
        assert_eq!(summary(plain), (S(1), None, S(1)));
        // The lower limit wins, wherever it is set.
        let limited = strategy.clone().with_backoff_max_restarts(5);
        for (options_limit, expected) in [(3, 3), (7, 5)] {
            let o = on_stop
                .clone()
                .with_max_restarts(options_limit)
                .with_supervisor_strategy(limited.clone());
            assert_eq!(summary(o).1, Some(expected));
        }
        // A reset period set on the options wins over the strategy's.
        let reset = strategy.clone().with_reset_backoff_after(S(4));
        let o = on_stop.clone().with_supervisor_strategy(reset.clone());
        assert_eq!(summary(o).2, S(4));
        let o = on_stop
            .with_reset_backoff_after(S(6))
            .with_supervisor_strategy(reset);
        assert_eq!(summary(o).2, S(6));
        // On-failure options without a strategy backoff are the backoff.
        let o = BackoffOptions::on_failure(S(2), S(20), 0.0).with_max_restarts(3);
        assert_eq!(summary(o), (S(2), Some(3), S(2)));
        // On stop, with no strategy backoff: not on failure.
        assert!(BackoffOptions::on_stop(S(2), S(20), 0.0)
            .failure_backoff()
            .is_none());
    }

    #[test]
    fn counts_resets_and_limits() {
        let b = BackoffOptions::new(S(1), S(100), 0.0)
            .with_reset_backoff_after(S(30))
            .with_max_restarts(3);
        let mut state = BackoffState::default();
        let t0 = Instant::now();
        assert_eq!(b.next(&mut state, t0), Some(S(1)));
        assert_eq!(b.next(&mut state, t0 + S(1)), Some(S(2)));
        // Healthy for 30 s after the restart at t0 + 3 s: starts over.
        assert_eq!(b.next(&mut state, t0 + S(33)), Some(S(1)));
        assert_eq!(b.next(&mut state, t0 + S(34)), Some(S(2)));
        assert_eq!(b.next(&mut state, t0 + S(36)), Some(S(4)));
        assert_eq!(b.next(&mut state, t0 + S(40)), None);
        // Read lazily: the count starts over once the reset period has
        // passed since the end of the last delay (t0 + 40 s).
        assert_eq!(b.restarts(&mut state, t0 + S(69)), 3);
        assert_eq!(b.restarts(&mut state, t0 + S(70)), 0);
    }
}
