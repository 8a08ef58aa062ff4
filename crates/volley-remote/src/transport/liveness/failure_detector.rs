//! The phi accrual failure detector (Hayashibara et al., "The φ accrual
//! failure detector"), as Akka's `PhiAccrualFailureDetector` computes it.
//!
//! A fixed timeout is either too eager on a loaded machine or too slow on
//! an idle one. Phi instead says how unlikely the current silence is, given
//! the intervals between the heartbeats seen so far: it is
//! `-log10(1 - F(silence))`, with `F` the normal distribution fitted to the
//! recent intervals. The threshold is then a confidence level (10 means
//! one chance in 10^10 that a live node would be this late), and the
//! detector adapts to how regular the peer's heartbeats really are.
//!
//! Two things keep it from being a hair trigger, both from Akka: the
//! acceptable pause is added to the mean, so a node may be silent that
//! long before phi even starts to rise, and the standard deviation has a
//! floor, so a perfectly regular history does not turn the first slightly
//! late heartbeat into a failure.
//!
//! A node may also be judged before it has sent anything ([`expect`]): the
//! silence since then is judged as if a heartbeat had arrived, with extra
//! patience, but that moment is not a heartbeat. The history starts at the
//! first real one, as Akka's does; a made-up arrival a few milliseconds
//! before it would enter the statistics as an interval near zero, widen
//! the deviation and delay every verdict until it ages out.
//!
//! Pure logic: every call takes the current `Instant`, so the tests drive
//! it with manual time and the caller decides where time comes from.
//!
//! [`expect`]: PhiAccrualFailureDetector::expect

use std::collections::VecDeque;
use std::time::Instant;

use crate::transport::settings::FailureDetectorSettings;

/// Suspicion that a node is down, from the arrival times of its heartbeats.
#[derive(Debug)]
pub(crate) struct PhiAccrualFailureDetector {
    threshold: f64,
    acceptable_pause_ms: f64,
    min_std_deviation_ms: f64,
    first_interval_ms: u64,
    history: HeartbeatHistory,
    /// When the last heartbeat arrived, or when judging began without
    /// one ([`Self::expect`]); `None` until either.
    last_heartbeat: Option<Instant>,
    /// Judging began without a heartbeat, and none has come since: this
    /// much more silence is accepted, and the next heartbeat starts the
    /// history instead of adding an interval to it.
    expected_grace_ms: Option<f64>,
}

impl PhiAccrualFailureDetector {
    pub(crate) fn new(settings: &FailureDetectorSettings) -> Self {
        PhiAccrualFailureDetector {
            threshold: settings.threshold,
            acceptable_pause_ms: millis(settings.acceptable_heartbeat_pause),
            min_std_deviation_ms: millis(settings.min_std_deviation),
            first_interval_ms: u64::try_from(settings.heartbeat_interval.as_millis())
                .unwrap_or(u64::MAX),
            history: HeartbeatHistory::new(settings.max_sample_size),
            last_heartbeat: None,
            expected_grace_ms: None,
        }
    }

    /// Starts judging at `now` a node that has not sent a heartbeat yet,
    /// unless it has (then this does nothing): its silence is judged as
    /// after a first heartbeat at `now`, with `grace` more acceptable
    /// pause, until its first real heartbeat starts the history.
    pub(crate) fn expect(&mut self, now: Instant, grace: std::time::Duration) {
        if self.last_heartbeat.is_some() {
            return;
        }
        self.history = self.first_history();
        self.last_heartbeat = Some(now);
        self.expected_grace_ms = Some(millis(grace));
    }

    /// Records a heartbeat that arrived at `now`.
    pub(crate) fn heartbeat(&mut self, now: Instant) {
        if self.expected_grace_ms.take().is_some() {
            // The first real heartbeat: the moment judging began is no
            // arrival, and the interval since is no sample.
            self.history = self.first_history();
            self.last_heartbeat = Some(now);
            return;
        }
        match self.last_heartbeat {
            None => self.history = self.first_history(),
            // The interval that ends a failure is not a sample: one long
            // pause would make every later silence look normal.
            Some(last) if self.is_available(now) => {
                let interval = now.saturating_duration_since(last).as_millis();
                self.history
                    .push(u64::try_from(interval).unwrap_or(u64::MAX));
            }
            Some(_) => {}
        }
        self.last_heartbeat = Some(now);
    }

    /// The suspicion level at `now`: 0 before any heartbeat (a node not yet
    /// heard from is not suspected), rising with the silence since the
    /// last one.
    pub(crate) fn phi(&self, now: Instant) -> f64 {
        let Some(last) = self.last_heartbeat else {
            return 0.0;
        };
        let silence_ms = now.saturating_duration_since(last).as_secs_f64() * 1000.0;
        let pause = self.acceptable_pause_ms + self.expected_grace_ms.unwrap_or(0.0);
        phi(
            silence_ms,
            self.history.mean() + pause,
            self.std_deviation(),
        )
    }

    /// The standard deviation phi uses: the history's, or the floor.
    fn std_deviation(&self) -> f64 {
        self.history.std_deviation().max(self.min_std_deviation_ms)
    }

    /// The mean interval phi uses.
    #[cfg(test)]
    fn mean(&self) -> f64 {
        self.history.mean()
    }

    /// Whether the node is judged without having sent a heartbeat yet.
    pub(crate) fn awaits_first_heartbeat(&self) -> bool {
        self.expected_grace_ms.is_some()
    }

    /// Whether phi at `now` is below the threshold.
    pub(crate) fn is_available(&self, now: Instant) -> bool {
        self.phi(now) < self.threshold
    }

    /// When the last heartbeat arrived, if one did.
    pub(crate) fn last_heartbeat(&self) -> Option<Instant> {
        self.last_heartbeat
    }

    /// The statistics before any interval is known: two samples around the
    /// configured heartbeat interval with a wide spread (a quarter of it),
    /// so that a node that sends one heartbeat and dies is still detected.
    fn first_history(&self) -> HeartbeatHistory {
        let mean = self.first_interval_ms;
        let spread = mean / 4;
        let mut history = HeartbeatHistory::new(self.history.max_samples);
        history.push(mean - spread);
        history.push(mean + spread);
        history
    }
}

/// A duration in milliseconds, the unit of the detector's statistics.
fn millis(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// `-log10(1 - F(time_diff))` for the normal distribution `N(mean,
/// std_deviation)`, with `F` approximated by the logistic function
/// `1 / (1 + e^(-y (1.5976 + 0.070566 y²)))`, `y = (time_diff - mean) /
/// std_deviation` (error below 0.00014). The two branches keep precision
/// at either tail, where the naive `1 - F` would round to 0 or 1.
fn phi(time_diff: f64, mean: f64, std_deviation: f64) -> f64 {
    let y = (time_diff - mean) / std_deviation;
    let e = (-y * (1.5976 + 0.070566 * y * y)).exp();
    if time_diff > mean {
        -(e / (1.0 + e)).log10()
    } else {
        -(1.0 - 1.0 / (1.0 + e)).log10()
    }
}

/// The most recent heartbeat intervals, in milliseconds, with running sums
/// so mean and variance cost no pass over the samples.
#[derive(Debug)]
struct HeartbeatHistory {
    max_samples: usize,
    intervals: VecDeque<u64>,
    sum: u128,
    sum_of_squares: u128,
}

impl HeartbeatHistory {
    fn new(max_samples: usize) -> Self {
        HeartbeatHistory {
            max_samples: max_samples.max(1),
            intervals: VecDeque::new(),
            sum: 0,
            sum_of_squares: 0,
        }
    }

    fn push(&mut self, interval_ms: u64) {
        if self.intervals.len() == self.max_samples {
            if let Some(oldest) = self.intervals.pop_front() {
                self.sum -= u128::from(oldest);
                self.sum_of_squares -= u128::from(oldest) * u128::from(oldest);
            }
        }
        self.intervals.push_back(interval_ms);
        self.sum += u128::from(interval_ms);
        self.sum_of_squares += u128::from(interval_ms) * u128::from(interval_ms);
    }

    /// Never called empty: the detector bootstraps it with two samples.
    fn mean(&self) -> f64 {
        self.sum as f64 / self.intervals.len().max(1) as f64
    }

    fn variance(&self) -> f64 {
        let n = self.intervals.len().max(1) as f64;
        let mean = self.mean();
        // Rounding may leave a tiny negative for equal samples.
        (self.sum_of_squares as f64 / n - mean * mean).max(0.0)
    }

    fn std_deviation(&self) -> f64 {
        self.variance().sqrt()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod pekko_tests;
