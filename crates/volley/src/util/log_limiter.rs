//! A rate limit for log lines, shared by the runtime and its transport.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

/// At most `per_second` permits per wall-clock second: for log lines about
/// events a peer or a busy sender can cause by the million.
#[derive(Debug)]
pub struct LogLimiter {
    per_second: u32,
    start: Instant,
    second: AtomicU64,
    used: AtomicU32,
}

impl LogLimiter {
    /// A limiter of `per_second` permits.
    pub fn new(per_second: u32) -> Self {
        LogLimiter {
            per_second,
            start: Instant::now(),
            second: AtomicU64::new(0),
            used: AtomicU32::new(0),
        }
    }

    /// True if one more line may be logged in the current second.
    pub fn allow(&self) -> bool {
        let now = self.start.elapsed().as_secs();
        if self.second.swap(now, Ordering::Relaxed) != now {
            self.used.store(0, Ordering::Relaxed);
        }
        self.used.fetch_add(1, Ordering::Relaxed) < self.per_second
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limiter_allows_its_quota_then_refuses() {
        let limiter = LogLimiter::new(3);
        let allowed = (0..10).filter(|_| limiter.allow()).count();
        // A second boundary inside the loop could allow up to twice the quota.
        assert!((3..=6).contains(&allowed), "{allowed}");
        assert!(!LogLimiter::new(0).allow());
    }
}
