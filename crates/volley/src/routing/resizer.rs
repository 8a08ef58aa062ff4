//! The resizer of an elastic pool (Akka's DefaultResizer, driven by a timer
//! instead of by message counts, because messages sent through the routed
//! ref never pass the router actor).
//!
//! Every `interval` the router reads each routee's approximate mailbox
//! length. A routee whose mailbox holds at least `pressure_threshold`
//! messages is *busy*. Then, with `n` routees of which `busy` are busy:
//! - if all are busy, the pool grows by `ceil(rampup_rate * n)`;
//! - if `busy / n < backoff_threshold`, it shrinks by
//!   `ceil(backoff_rate * n)` (at least one);
//! - the result is kept between `lower_bound` and `upper_bound`.
//!
//! Routees picked for removal are the least loaded; they are taken out of the
//! routing table at once and stopped gracefully, after the messages already
//! in their mailboxes.

use std::time::Duration;

/// Settings of an elastic pool. Defaults (from `Resizer::new`) follow Akka:
/// `pressure_threshold` 1, `rampup_rate` 0.2, `backoff_threshold` 0.3,
/// `backoff_rate` 0.1, and a 100 ms `interval`.
#[derive(Debug, Clone, PartialEq)]
pub struct Resizer {
    /// The fewest routees (at least 1).
    pub lower_bound: usize,
    /// The most routees.
    pub upper_bound: usize,
    /// Queued messages from which a routee counts as busy (at least 1).
    pub pressure_threshold: usize,
    /// Growth, as a fraction of the current size, when every routee is busy.
    pub rampup_rate: f64,
    /// Shrink when fewer than this fraction of the routees are busy
    /// (0 disables shrinking).
    pub backoff_threshold: f64,
    /// Shrink by this fraction of the current size (at least one routee).
    pub backoff_rate: f64,
    /// How often the router checks the pressure.
    pub interval: Duration,
}

impl Resizer {
    /// A resizer between `lower_bound` and `upper_bound` routees with the
    /// default settings.
    ///
    /// # Panics
    /// If `lower_bound` is 0 (a pool stops when its last routee is gone) or
    /// greater than `upper_bound`.
    pub fn new(lower_bound: usize, upper_bound: usize) -> Self {
        assert!(
            lower_bound >= 1,
            "a resizer's lower bound must be at least 1"
        );
        assert!(
            lower_bound <= upper_bound,
            "a resizer's lower bound ({lower_bound}) exceeds its upper bound ({upper_bound})"
        );
        Resizer {
            lower_bound,
            upper_bound,
            pressure_threshold: 1,
            rampup_rate: 0.2,
            backoff_threshold: 0.3,
            backoff_rate: 0.1,
            interval: Duration::from_millis(100),
        }
    }

    /// Sets how often the pressure is checked.
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets the queue length from which a routee counts as busy.
    pub fn with_pressure_threshold(mut self, messages: usize) -> Self {
        self.pressure_threshold = messages.max(1);
        self
    }

    /// Sets the growth rate.
    pub fn with_rampup_rate(mut self, rate: f64) -> Self {
        self.rampup_rate = rate;
        self
    }

    /// Sets when and by how much to shrink.
    pub fn with_backoff(mut self, threshold: f64, rate: f64) -> Self {
        self.backoff_threshold = threshold;
        self.backoff_rate = rate;
        self
    }

    /// The size a pool starts with when asked for `requested` routees.
    pub fn initial_size(&self, requested: usize) -> usize {
        requested.clamp(self.lower_bound, self.upper_bound)
    }

    /// How many routees to add (positive) or remove (negative), given the
    /// current routees' mailbox lengths.
    pub fn capacity_delta(&self, mailbox_lens: &[usize]) -> isize {
        let n = mailbox_lens.len();
        let busy = mailbox_lens
            .iter()
            .filter(|&&len| len >= self.pressure_threshold.max(1))
            .count();
        let mut proposed = n as f64;
        if n > 0 && busy == n && self.rampup_rate > 0.0 {
            proposed += (self.rampup_rate * n as f64).ceil().max(1.0);
        } else if n > 0
            && self.backoff_threshold > 0.0
            && self.backoff_rate > 0.0
            && (busy as f64 / n as f64) < self.backoff_threshold
        {
            proposed -= (self.backoff_rate * n as f64).ceil().max(1.0);
        }
        let target = (proposed.max(0.0) as usize).clamp(self.lower_bound, self.upper_bound);
        target as isize - n as isize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_when_all_busy_shrinks_when_idle_within_bounds() {
        let r = Resizer::new(2, 6);
        assert_eq!(r.capacity_delta(&[3, 1, 5]), 1, "all busy: +ceil(0.2*3)");
        assert_eq!(r.capacity_delta(&[3; 6]), 0, "at the upper bound");
        assert_eq!(r.capacity_delta(&[0, 0, 0, 0]), -1, "idle: -ceil(0.1*4)");
        assert_eq!(r.capacity_delta(&[0, 0]), 0, "at the lower bound");
        assert_eq!(r.capacity_delta(&[1, 0, 1]), 0, "some busy: steady");
        assert_eq!(r.capacity_delta(&[]), 2, "below the lower bound");
    }

    #[test]
    #[should_panic(expected = "lower bound")]
    fn zero_lower_bound_is_refused() {
        Resizer::new(0, 3);
    }
}
