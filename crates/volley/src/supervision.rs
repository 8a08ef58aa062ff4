//! Supervision: what a parent does when a child fails.
//!
//! As in Akka classic, the parent's [`SupervisorStrategy`] decides: its
//! decider maps the failure to a [`Directive`], and a restart limit (at most
//! N restarts within a window) turns a restart into a stop once exceeded.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Failure, FailureKind};

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
