//! A token bucket per inbound connection, bounding the cluster frames a
//! peer can make this node's cluster handle.

use std::time::Instant;

use crate::transport::settings::ClusterTransportSettings;

/// Allows `rate` frames a second, and `burst` at once.
#[derive(Debug)]
pub(crate) struct InboundRate {
    tokens: f64,
    rate: f64,
    burst: f64,
    last: Instant,
}

impl InboundRate {
    /// A full bucket.
    pub(crate) fn new(settings: &ClusterTransportSettings, now: Instant) -> Self {
        let burst = f64::from(settings.inbound_burst);
        InboundRate {
            tokens: burst,
            rate: f64::from(settings.inbound_frames_per_second),
            burst,
            last: now,
        }
    }

    /// Takes a token if there is one.
    pub(crate) fn allow(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let settings = ClusterTransportSettings {
            inbound_frames_per_second: 10,
            inbound_burst: 20,
            ..Default::default()
        };
        let start = Instant::now();
        let mut rate = InboundRate::new(&settings, start);
        assert_eq!((0..30).filter(|_| rate.allow(start)).count(), 20);
        // A second later, ten more, never more than the burst.
        let later = start + Duration::from_secs(1);
        assert_eq!((0..30).filter(|_| rate.allow(later)).count(), 10);
        let much_later = later + Duration::from_secs(60);
        assert_eq!((0..30).filter(|_| rate.allow(much_later)).count(), 20);
    }
}
