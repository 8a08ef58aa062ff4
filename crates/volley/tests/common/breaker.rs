//! The fixture of Pekko's `CircuitBreakerSpec` in volley's API: a breaker
//! on a manual clock whose listeners record what they hear, in order.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use volley::{ActorSystem, CircuitBreaker, CircuitBreakerSettings};
use volley_testkit::ManualTime;

pub const MS: Duration = Duration::from_millis(1);

/// What the breaker's listeners heard (the spec's latches and `CBSuccess`,
/// `CBFailure`, `CBTimeout` probe messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    Open,
    HalfOpen,
    Close,
    Success(Duration),
    Failure(Duration),
    Timeout(Duration),
    BreakerOpen,
}

/// A breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed,
    Open,
    HalfOpen,
}

/// The spec's `Breaker`.
pub struct Breaker {
    pub time: ManualTime,
    pub system: ActorSystem,
    pub cb: CircuitBreaker,
    events: Arc<Mutex<Vec<Ev>>>,
}

impl Breaker {
    pub fn new(name: &str, settings: CircuitBreakerSettings) -> Breaker {
        let time = ManualTime::new();
        let system =
            super::system_with(name, time.settings(volley::Settings::default())).expect("a system");
        let cb = CircuitBreaker::new(&system, settings).expect("valid settings");
        let events: Arc<Mutex<Vec<Ev>>> = Arc::default();
        let push = |ev: Ev| {
            let events = events.clone();
            move || events.lock().unwrap().push(ev)
        };
        let timed = |ev: fn(Duration) -> Ev| {
            let events = events.clone();
            move |d| events.lock().unwrap().push(ev(d))
        };
        cb.on_open(push(Ev::Open))
            .on_half_open(push(Ev::HalfOpen))
            .on_close(push(Ev::Close))
            .on_call_breaker_open(push(Ev::BreakerOpen))
            .on_call_success(timed(Ev::Success))
            .on_call_failure(timed(Ev::Failure))
            .on_call_timeout(timed(Ev::Timeout));
        Breaker {
            time,
            system,
            cb,
            events,
        }
    }

    /// Everything heard since the last `take`.
    pub fn take(&self) -> Vec<Ev> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    /// Asserts the breaker's state and what the listeners heard since the
    /// last `take` (or `expect`).
    #[track_caller]
    pub fn expect(&self, state: State, heard: &[Ev]) {
        let now = match () {
            _ if self.cb.is_closed() => State::Closed,
            _ if self.cb.is_open() => State::Open,
            _ => State::HalfOpen,
        };
        assert_eq!(now, state);
        assert_eq!(self.take(), heard);
    }

    /// Advances the manual clock.
    pub fn advance(&self, d: Duration) {
        self.time.advance(d);
    }

    pub async fn end(self) {
        self.system.terminate().await;
    }
}

fn settings(max_failures: u32, call_ms: u64, reset_ms: u64) -> CircuitBreakerSettings {
    CircuitBreakerSettings::new(
        max_failures,
        Duration::from_millis(call_ms),
        Duration::from_millis(reset_ms),
    )
}

/// `multiFailureCb`: 5 failures, 200 ms call timeout, 500 ms reset.
pub fn multi_failure() -> Breaker {
    Breaker::new("multi-failure", settings(5, 200, 500))
}

/// `shortCallTimeoutCb`: 1 failure, 50 ms call timeout, 500 ms reset.
pub fn short_call_timeout() -> Breaker {
    Breaker::new("short-call-timeout", settings(1, 50, 500))
}

/// `shortResetTimeoutCb`: 1 failure, 1 s call timeout, 50 ms reset.
pub fn short_reset_timeout() -> Breaker {
    Breaker::new("short-reset-timeout", settings(1, 1000, 50))
}

/// `longCallTimeoutCb`: 1 failure, 5 s call timeout, 500 ms reset.
pub fn long_call_timeout() -> Breaker {
    Breaker::new("long-call-timeout", settings(1, 5000, 500))
}

/// `longResetTimeoutCb`: 1 failure, 100 ms call timeout, 5 s reset.
pub fn long_reset_timeout() -> Breaker {
    Breaker::new("long-reset-timeout", settings(1, 100, 5000))
}

/// `nonOneFactorCb`: 1 failure, 2 s call timeout, 1 s reset growing
/// fivefold up to a day, no random factor.
pub fn non_one_factor() -> Breaker {
    Breaker::new(
        "non-one-factor",
        settings(1, 2000, 1000)
            .with_exponential_backoff_factor(5.0)
            .with_max_reset_timeout(Duration::from_secs(86_400)),
    )
}

/// The spec's `TestException`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestException;

impl std::fmt::Display for TestException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("test exception")
    }
}

/// `evenNumberIsFailure`.
pub fn even_number_is_failure(r: &Result<u32, TestException>) -> bool {
    !matches!(r, Ok(n) if n % 2 != 0)
}
