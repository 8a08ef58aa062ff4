//! Akka's `CircuitBreaker`: fail fast while a dependency is failing, and
//! try it again now and then.
//!
//! Closed, calls go through and consecutive failures are counted; at
//! `max_failures` (or when one call takes `call_timeout` or longer) the
//! breaker opens. Open, every call fails at once with
//! [`CircuitBreakerError::Open`] for `reset_timeout`; then it is half-open
//! and lets one trial call through (the others fail fast). The trial's
//! success closes it; its failure opens it again, for a reset timeout
//! grown by the backoff factor (up to the maximum).
//!
//! The reset and call timeouts run on the system's timer driver, so a
//! system on a manual clock (volley-testkit's `ManualTime`) times them when
//! the test advances it. The guarantees and the differences from Akka are
//! in `docs/reference/circuit-breaker.md`.

mod call;
mod core;
mod permit;
mod settings;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use self::core::{state_of, Core, Event, Kind, CLOSED, HALF_OPEN, OPEN};
use crate::system::actor_system::ActorSystem;

pub use permit::CallPermit;
pub use settings::{CircuitBreakerSettings, CircuitBreakerSettingsError};

/// Why a call through a [`CircuitBreaker`] did not return its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CircuitBreakerError<E> {
    /// The breaker is open (or half-open with its trial call under way):
    /// the call was not made (Akka's `CircuitBreakerOpenException`).
    #[error("the circuit breaker is open; it lets a call through again in {remaining:?}")]
    Open {
        /// How long until the breaker lets a trial call through; zero
        /// while half-open.
        remaining: Duration,
    },
    /// The call did not finish within the breaker's `call_timeout`. An
    /// async call is dropped at its timeout; a synchronous one ran to its
    /// end and its result was discarded.
    #[error(
        "the call did not finish within the circuit breaker's call timeout of {call_timeout:?}"
    )]
    Timeout {
        /// The breaker's `call_timeout`.
        call_timeout: Duration,
    },
    /// The call returned this error.
    #[error("the call failed: {0}")]
    Failed(E),
}

/// The breaker refused a [`CircuitBreaker::permit`]: it is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the circuit breaker is open; it lets a call through again in {remaining:?}")]
pub struct CircuitBreakerOpen {
    /// How long until the breaker lets a trial call through; zero while
    /// half-open.
    pub remaining: Duration,
}

impl<E> From<CircuitBreakerOpen> for CircuitBreakerError<E> {
    fn from(open: CircuitBreakerOpen) -> Self {
        CircuitBreakerError::Open {
            remaining: open.remaining,
        }
    }
}

/// Akka's `CircuitBreaker`: wraps calls to a dependency, counts their
/// failures and, once there are `max_failures` in a row, fails calls at
/// once for a while instead of making them. See the [module
/// docs](self) for the states.
///
/// Cheap to clone: clones share one breaker. Thread-safe; in the closed
/// state a call takes no lock (but a shared read of the listener list
/// when call listeners are set). Calls from async code go through
/// [`CircuitBreaker::call`]; from an actor's handler (synchronous) through
/// [`CircuitBreaker::with_sync_call`], or [`CircuitBreaker::permit`] when
/// the outcome arrives later as a message.
///
/// ```
/// use std::time::Duration;
/// use volley::{ActorSystem, CircuitBreaker, CircuitBreakerError, CircuitBreakerSettings};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let system = ActorSystem::new("doc").unwrap();
/// let settings = CircuitBreakerSettings::new(1, Duration::from_secs(1), Duration::from_secs(30));
/// let breaker = CircuitBreaker::new(&system, settings).unwrap();
/// let failed: Result<u32, _> = breaker.call(async { Err("down") }).await;
/// assert_eq!(failed, Err(CircuitBreakerError::Failed("down")));
/// assert!(breaker.is_open());
/// let refused = breaker.call(async { Ok::<_, &str>(1) }).await;
/// assert!(matches!(refused, Err(CircuitBreakerError::Open { .. })));
/// system.terminate().await;
/// # });
/// ```
#[derive(Clone)]
pub struct CircuitBreaker {
    core: Arc<Core>,
}

impl CircuitBreaker {
    /// A closed breaker timed by `system`'s clock (its manual clock, if it
    /// has one). Fails if the settings do not pass
    /// [`CircuitBreakerSettings::validate`].
    pub fn new(
        system: &ActorSystem,
        settings: CircuitBreakerSettings,
    ) -> Result<Self, CircuitBreakerSettingsError> {
        settings.validate()?;
        Ok(CircuitBreaker {
            core: Core::new(settings, system.timer_driver()),
        })
    }

    /// The breaker's settings.
    pub fn settings(&self) -> &CircuitBreakerSettings {
        &self.core.settings
    }

    /// Leave to make one call, if the breaker allows it: always when
    /// closed; when half-open, only the first caller (the trial). Refused
    /// calls are heard by [`CircuitBreaker::on_call_breaker_open`].
    pub fn permit(&self) -> Result<CallPermit, CircuitBreakerOpen> {
        let mut reset_tried = false;
        loop {
            let word = self.core.word();
            match state_of(word) {
                CLOSED => return Ok(CallPermit::new(self.core.clone(), word)),
                HALF_OPEN => {
                    if self.core.take_trial() {
                        if self.core.word() == word {
                            return Ok(CallPermit::new(self.core.clone(), word));
                        }
                        // The trial of a later state (see `return_trial`).
                        self.core.return_trial(self.core.word());
                        continue;
                    }
                    return Err(self.refuse(Duration::ZERO));
                }
                _ => {
                    let remaining = self.core.remaining_open();
                    // The open period is over but its timer has not run
                    // yet (or cannot: a stopped runtime).
                    if remaining.is_zero() && !reset_tried {
                        reset_tried = true;
                        self.core.attempt_reset(word);
                        continue;
                    }
                    return Err(self.refuse(remaining));
                }
            }
        }
    }

    fn refuse(&self, remaining: Duration) -> CircuitBreakerOpen {
        self.core.notify(Event::CallBreakerOpen);
        CircuitBreakerOpen { remaining }
    }

    /// Runs `call` through the breaker (Akka's `withCircuitBreaker`): an
    /// `Err` counts as a failure. Fails at once, without polling `call`,
    /// if the breaker is open; drops `call` and fails with
    /// [`CircuitBreakerError::Timeout`] once it has run for `call_timeout`.
    pub async fn call<F, T, E>(&self, call: F) -> Result<T, CircuitBreakerError<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        self.call_with(call, Result::is_err).await
    }

    /// As [`CircuitBreaker::call`], with `is_failure` deciding what counts
    /// as a failure (Akka's `defineFailureFn`). A timeout always counts.
    pub async fn call_with<F, T, E>(
        &self,
        call: F,
        is_failure: impl FnOnce(&Result<T, E>) -> bool,
    ) -> Result<T, CircuitBreakerError<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let permit = self.permit()?;
        call::run(permit, call, is_failure).await
    }

    /// Runs `call` on this thread through the breaker (Akka's
    /// `withSyncCircuitBreaker`), for an actor's handler: an `Err` counts
    /// as a failure, a panic too (and goes on unwinding). A call that
    /// took `call_timeout` or longer is a [`CircuitBreakerError::Timeout`]
    /// and its result is dropped; it is not interrupted.
    pub fn with_sync_call<T, E>(
        &self,
        call: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CircuitBreakerError<E>> {
        self.with_sync_call_with(call, Result::is_err)
    }

    /// As [`CircuitBreaker::with_sync_call`], with `is_failure` deciding
    /// what counts as a failure.
    pub fn with_sync_call_with<T, E>(
        &self,
        call: impl FnOnce() -> Result<T, E>,
        is_failure: impl FnOnce(&Result<T, E>) -> bool,
    ) -> Result<T, CircuitBreakerError<E>> {
        let permit = self.permit()?;
        let result = call();
        permit.finish_with(result, is_failure)
    }

    /// Counts a success made outside the breaker (Akka's `succeed`):
    /// closed, it resets the failure count; half-open, it closes the
    /// breaker; open, it does nothing.
    pub fn succeed(&self) {
        self.core.succeeded(self.core.word());
    }

    /// Counts a failure made outside the breaker (Akka's `fail`): closed,
    /// it may open the breaker; half-open, it opens it; open, it does
    /// nothing.
    pub fn fail(&self) {
        self.core.failed(self.core.word());
    }

    /// True while closed.
    pub fn is_closed(&self) -> bool {
        state_of(self.core.word()) == CLOSED
    }

    /// True while open.
    pub fn is_open(&self) -> bool {
        state_of(self.core.word()) == OPEN
    }

    /// True while half-open.
    pub fn is_half_open(&self) -> bool {
        state_of(self.core.word()) == HALF_OPEN
    }

    /// The consecutive failures counted in the closed state (Akka's
    /// `currentFailureCount`); kept while open, zeroed when the breaker
    /// closes again.
    pub fn current_failure_count(&self) -> u32 {
        self.core.failure_count()
    }

    /// Runs `f` each time the breaker opens.
    pub fn on_open(&self, f: impl Fn() + Send + Sync + 'static) -> &Self {
        self.listen(Kind::Open, move |_| f())
    }

    /// Runs `f` each time the breaker turns half-open.
    pub fn on_half_open(&self, f: impl Fn() + Send + Sync + 'static) -> &Self {
        self.listen(Kind::HalfOpen, move |_| f())
    }

    /// Runs `f` each time the breaker closes.
    pub fn on_close(&self, f: impl Fn() + Send + Sync + 'static) -> &Self {
        self.listen(Kind::Close, move |_| f())
    }

    /// Runs `f` with the elapsed time of each call that succeeds.
    pub fn on_call_success(&self, f: impl Fn(Duration) + Send + Sync + 'static) -> &Self {
        self.listen(Kind::CallSuccess, move |e| {
            if let Event::CallSuccess(d) = e {
                f(d)
            }
        })
    }

    /// Runs `f` with the elapsed time of each call that fails (not one
    /// that times out).
    pub fn on_call_failure(&self, f: impl Fn(Duration) + Send + Sync + 'static) -> &Self {
        self.listen(Kind::CallFailure, move |e| {
            if let Event::CallFailure(d) = e {
                f(d)
            }
        })
    }

    /// Runs `f` with the elapsed time of each call that times out.
    pub fn on_call_timeout(&self, f: impl Fn(Duration) + Send + Sync + 'static) -> &Self {
        self.listen(Kind::CallTimeout, move |e| {
            if let Event::CallTimeout(d) = e {
                f(d)
            }
        })
    }

    /// Runs `f` for each call the breaker refuses.
    pub fn on_call_breaker_open(&self, f: impl Fn() + Send + Sync + 'static) -> &Self {
        self.listen(Kind::CallBreakerOpen, move |_| f())
    }

    fn listen(&self, kind: Kind, f: impl Fn(Event) + Send + Sync + 'static) -> &Self {
        self.core.add_listener((kind, Arc::new(f)));
        self
    }
}

impl std::fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match state_of(self.core.word()) {
            CLOSED => "closed",
            OPEN => "open",
            _ => "half-open",
        };
        f.debug_struct("CircuitBreaker")
            .field("state", &state)
            .field("failures", &self.core.failure_count())
            .field("settings", &self.core.settings)
            .finish()
    }
}
