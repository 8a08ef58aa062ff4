//! One call through the breaker: the permit it was let through with, and
//! what its outcome does to the breaker.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::core::{state_of, Core, Event, HALF_OPEN};
use super::CircuitBreakerError;

/// Leave to make one call through a [`CircuitBreaker`](crate::CircuitBreaker),
/// from [`CircuitBreaker::permit`](crate::CircuitBreaker::permit): the
/// guard form of a call, for an outcome that arrives later (an actor's
/// `ctx.ask` whose reply comes back as a message, say). Report the outcome
/// with [`CallPermit::finish`] (or `succeed` / `fail`); the call's time is
/// measured from the permit's making, so one that reports after the
/// breaker's `call_timeout` counts as a timeout.
///
/// Dropped without an outcome, it counts nothing, except that a permit
/// dropped while its thread panics counts as a failure, and the half-open
/// state's single trial is handed back so the next call can be the trial.
/// `Send`, so it can travel with the request.
#[must_use = "a permit counts nothing until its outcome is reported"]
pub struct CallPermit {
    core: Arc<Core>,
    /// The breaker's state and epoch when the call was let through: the
    /// outcome counts only if the breaker is still there.
    word: u64,
    start: Instant,
    done: bool,
}

enum Outcome {
    Success,
    Failure,
    Timeout,
}

impl CallPermit {
    pub(super) fn new(core: Arc<Core>, word: u64) -> Self {
        let start = core.now();
        CallPermit {
            core,
            word,
            start,
            done: false,
        }
    }

    /// How long the call has taken so far, on the breaker's clock.
    pub fn elapsed(&self) -> Duration {
        self.core.now().saturating_duration_since(self.start)
    }

    /// Reports `result` (an `Err` counts as a failure) and hands it back
    /// in the breaker's error type; a call that took `call_timeout` or
    /// longer is a [`CircuitBreakerError::Timeout`] whatever its result.
    pub fn finish<T, E>(self, result: Result<T, E>) -> Result<T, CircuitBreakerError<E>> {
        self.finish_with(result, Result::is_err)
    }

    /// As [`CallPermit::finish`], with `is_failure` deciding what counts as
    /// a failure (Akka's `defineFailureFn`): an `Ok` can count as one, an
    /// `Err` as a success. The result is handed back unchanged either way.
    pub fn finish_with<T, E>(
        mut self,
        result: Result<T, E>,
        is_failure: impl FnOnce(&Result<T, E>) -> bool,
    ) -> Result<T, CircuitBreakerError<E>> {
        let elapsed = self.elapsed();
        let call_timeout = self.core.settings.call_timeout();
        if elapsed >= call_timeout {
            self.record(Outcome::Timeout, elapsed);
            return Err(CircuitBreakerError::Timeout { call_timeout });
        }
        let outcome = if is_failure(&result) {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        self.record(outcome, elapsed);
        result.map_err(CircuitBreakerError::Failed)
    }

    /// Reports a success (a timeout if the call took `call_timeout` or
    /// longer).
    pub fn succeed(self) {
        let _ = self.finish(Ok::<(), ()>(()));
    }

    /// Reports a failure (a timeout if the call took `call_timeout` or
    /// longer).
    pub fn fail(self) {
        let _ = self.finish(Err::<(), ()>(()));
    }

    /// The call did not finish within `call_timeout`.
    pub(super) fn timed_out<E>(mut self) -> CircuitBreakerError<E> {
        let elapsed = self.elapsed();
        self.record(Outcome::Timeout, elapsed);
        CircuitBreakerError::Timeout {
            call_timeout: self.core.settings.call_timeout(),
        }
    }

    /// How long until the call times out.
    pub(super) fn time_left(&self) -> Duration {
        self.core
            .settings
            .call_timeout()
            .saturating_sub(self.elapsed())
    }

    pub(super) fn core(&self) -> &Core {
        &self.core
    }

    /// The call's listeners first, then the state (so a listener hears a
    /// call's failure before the opening it causes, as in Akka).
    fn record(&mut self, outcome: Outcome, elapsed: Duration) {
        self.done = true;
        match outcome {
            Outcome::Success => {
                self.core.notify(Event::CallSuccess(elapsed));
                self.core.succeeded(self.word);
            }
            Outcome::Failure => {
                self.core.notify(Event::CallFailure(elapsed));
                self.core.failed(self.word);
            }
            Outcome::Timeout => {
                self.core.notify(Event::CallTimeout(elapsed));
                self.core.failed(self.word);
            }
        }
    }
}

impl Drop for CallPermit {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if std::thread::panicking() {
            let elapsed = self.elapsed();
            self.record(Outcome::Failure, elapsed);
        } else if state_of(self.word) == HALF_OPEN {
            self.core.return_trial(self.word);
        }
    }
}

impl std::fmt::Debug for CallPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPermit")
            .field("elapsed", &self.elapsed())
            .finish_non_exhaustive()
    }
}
