//! What a circuit breaker is configured with, and the checks on it.

use std::time::Duration;

/// How a [`CircuitBreaker`](crate::CircuitBreaker) counts failures and how
/// long it stays open (Akka's `CircuitBreaker` constructor arguments).
///
/// Built with [`CircuitBreakerSettings::new`] and the `with_*` methods;
/// checked when the breaker is made ([`CircuitBreakerSettings::validate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CircuitBreakerSettings {
    max_failures: u32,
    call_timeout: Duration,
    reset_timeout: Duration,
    exponential_backoff_factor: f64,
    max_reset_timeout: Duration,
    random_factor: f64,
}

/// Why [`CircuitBreakerSettings`] were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CircuitBreakerSettingsError {
    /// `max_failures` was 0: the breaker could never open.
    #[error("circuit breaker max_failures must be at least 1")]
    ZeroMaxFailures,
    /// `call_timeout` was zero: every call would time out.
    #[error("circuit breaker call_timeout must be greater than zero")]
    ZeroCallTimeout,
    /// `reset_timeout` was zero: the breaker would never stay open.
    #[error("circuit breaker reset_timeout must be greater than zero")]
    ZeroResetTimeout,
    /// The backoff factor was below 1.0, or not a finite number.
    #[error("circuit breaker exponential_backoff_factor must be a finite number >= 1.0, got {0}")]
    BackoffFactor(f64),
    /// The random factor was outside `0.0..=1.0`, or not a number.
    #[error("circuit breaker random_factor must be within 0.0..=1.0, got {0}")]
    RandomFactor(f64),
    /// `max_reset_timeout` was shorter than `reset_timeout`.
    #[error(
        "circuit breaker max_reset_timeout ({max:?}) must not be shorter than reset_timeout ({reset:?})"
    )]
    MaxResetTimeout {
        /// The `max_reset_timeout` given.
        max: Duration,
        /// The `reset_timeout` given.
        reset: Duration,
    },
}

impl CircuitBreakerSettings {
    /// The default `max_reset_timeout`: 36 500 days, Akka's "no limit".
    pub const UNBOUNDED_RESET_TIMEOUT: Duration = Duration::from_secs(36_500 * 24 * 3600);

    /// Opens after `max_failures` consecutive failures (or one call
    /// taking `call_timeout` or longer) and stays open for
    /// `reset_timeout`; no backoff (factor 1.0) and no random factor.
    pub fn new(max_failures: u32, call_timeout: Duration, reset_timeout: Duration) -> Self {
        CircuitBreakerSettings {
            max_failures,
            call_timeout,
            reset_timeout,
            exponential_backoff_factor: 1.0,
            max_reset_timeout: Self::UNBOUNDED_RESET_TIMEOUT,
            random_factor: 0.0,
        }
    }

    /// Each time a trial call fails and the breaker opens again, the
    /// time it stays open is multiplied by `factor` (at least 1.0), up to
    /// `max_reset_timeout`. It starts over from `reset_timeout` once the
    /// breaker closes.
    pub fn with_exponential_backoff_factor(mut self, factor: f64) -> Self {
        self.exponential_backoff_factor = factor;
        self
    }

    /// The longest the breaker stays open, however often it has opened
    /// again.
    pub fn with_max_reset_timeout(mut self, max: Duration) -> Self {
        self.max_reset_timeout = max;
        self
    }

    /// Akka's `withExponentialBackoff`: a backoff factor of 2.0 up to
    /// `max_reset_timeout`.
    pub fn with_exponential_backoff(self, max_reset_timeout: Duration) -> Self {
        self.with_exponential_backoff_factor(2.0)
            .with_max_reset_timeout(max_reset_timeout)
    }

    /// Stretches each grown reset timeout by a random `1.0..=1.0 + factor`
    /// (`0.0..=1.0`), so that breakers opened together do not all try
    /// again at the same moment.
    pub fn with_random_factor(mut self, factor: f64) -> Self {
        self.random_factor = factor;
        self
    }

    /// Consecutive failures that open the breaker.
    pub fn max_failures(&self) -> u32 {
        self.max_failures
    }

    /// How long a call may take before it counts as a failure.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// How long the breaker stays open the first time.
    pub fn reset_timeout(&self) -> Duration {
        self.reset_timeout
    }

    /// The factor the reset timeout grows by each time the breaker opens
    /// again.
    pub fn exponential_backoff_factor(&self) -> f64 {
        self.exponential_backoff_factor
    }

    /// The longest reset timeout.
    pub fn max_reset_timeout(&self) -> Duration {
        self.max_reset_timeout
    }

    /// How much a grown reset timeout is stretched at random.
    pub fn random_factor(&self) -> f64 {
        self.random_factor
    }

    /// Checks the settings: at least one failure, non-zero timeouts, a
    /// finite backoff factor of at least 1.0, a random factor within
    /// `0.0..=1.0` and a maximum reset timeout no shorter than the first.
    pub fn validate(&self) -> Result<(), CircuitBreakerSettingsError> {
        use CircuitBreakerSettingsError as E;
        if self.max_failures == 0 {
            return Err(E::ZeroMaxFailures);
        }
        if self.call_timeout.is_zero() {
            return Err(E::ZeroCallTimeout);
        }
        if self.reset_timeout.is_zero() {
            return Err(E::ZeroResetTimeout);
        }
        let factor = self.exponential_backoff_factor;
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(E::BackoffFactor(factor));
        }
        if !(0.0..=1.0).contains(&self.random_factor) {
            return Err(E::RandomFactor(self.random_factor));
        }
        if self.max_reset_timeout < self.reset_timeout {
            return Err(E::MaxResetTimeout {
                max: self.max_reset_timeout,
                reset: self.reset_timeout,
            });
        }
        Ok(())
    }

    /// The reset timeout after `current`: grown by the factor, stretched
    /// by a random draw from `[0, 1)` (`unit`), capped by the maximum.
    pub(crate) fn next_reset_timeout(&self, current: Duration, unit: f64) -> Duration {
        let stretch = 1.0 + unit * self.random_factor;
        let secs = current.as_secs_f64() * self.exponential_backoff_factor * stretch;
        Duration::try_from_secs_f64(secs)
            .unwrap_or(self.max_reset_timeout)
            .min(self.max_reset_timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn refuses_bad_values_with_the_reason() {
        use CircuitBreakerSettingsError as E;
        let ok = CircuitBreakerSettings::new(3, S(1), S(5));
        assert_eq!(ok.validate(), Ok(()));
        let cases = [
            (
                CircuitBreakerSettings::new(0, S(1), S(5)),
                E::ZeroMaxFailures,
            ),
            (
                CircuitBreakerSettings::new(1, S(0), S(5)),
                E::ZeroCallTimeout,
            ),
            (
                CircuitBreakerSettings::new(1, S(1), S(0)),
                E::ZeroResetTimeout,
            ),
            (
                ok.clone().with_exponential_backoff_factor(0.5),
                E::BackoffFactor(0.5),
            ),
            (
                ok.clone().with_exponential_backoff_factor(f64::INFINITY),
                E::BackoffFactor(f64::INFINITY),
            ),
            (ok.clone().with_random_factor(1.5), E::RandomFactor(1.5)),
            (ok.clone().with_random_factor(-0.1), E::RandomFactor(-0.1)),
            (
                ok.clone().with_max_reset_timeout(S(4)),
                E::MaxResetTimeout {
                    max: S(4),
                    reset: S(5),
                },
            ),
        ];
        for (settings, expected) in cases {
            assert_eq!(settings.validate(), Err(expected), "{settings:?}");
        }
        let nan = ok.with_random_factor(f64::NAN).validate().unwrap_err();
        assert!(nan.to_string().contains("random_factor"), "{nan}");
    }

    #[test]
    fn the_reset_timeout_grows_by_the_factor_up_to_the_maximum() {
        let s = CircuitBreakerSettings::new(1, S(1), S(1)).with_exponential_backoff(S(5));
        assert_eq!(s.next_reset_timeout(S(1), 0.0), S(2));
        assert_eq!(s.next_reset_timeout(S(2), 0.0), S(4));
        assert_eq!(s.next_reset_timeout(S(4), 0.0), S(5));
        let r = s.clone().with_random_factor(0.5);
        assert_eq!(r.next_reset_timeout(S(1), 0.5), Duration::from_millis(2500));
        let flat = CircuitBreakerSettings::new(1, S(1), S(3));
        assert_eq!(flat.next_reset_timeout(S(3), 0.9), S(3));
    }
}
