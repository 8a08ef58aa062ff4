//! The reconnect schedule's bounds as the settings give them: the
//! jitter every pause gets, and the longest pause a lane may sleep,
//! which other nodes' failure detectors must outlast
//! (`outbound/backoff.rs` runs the schedule).

use std::time::Duration;

use super::RemoteSettings;

/// The longest pause a lane may sleep between two attempts: the ceiling
/// with the most jitter. A node that judges a peer from its first contact
/// grants it this long to come out of a pause and heartbeat.
pub(crate) fn longest_pause(settings: &RemoteSettings) -> Duration {
    let first = settings.reconnect_backoff.max(Duration::from_millis(1));
    let max = settings.reconnect_backoff_max.max(first);
    jitter(max, JITTER_SPAN)
}

/// How far apart, in thousandths of the base, the jittered pauses spread.
pub(crate) const JITTER_SPAN: u64 = 400;

/// `base` scaled by a factor between 0.8 and 1.2 taken from `random`.
pub(crate) fn jitter(base: Duration, random: u64) -> Duration {
    let per_mille = 800 + random % (JITTER_SPAN + 1);
    base.saturating_mul(per_mille as u32) / 1000
}

/// Settings with a reconnect schedule from `first` to `max` milliseconds,
/// for the tests of the schedule.
#[cfg(test)]
pub(crate) fn reconnect_settings(first: u64, max: u64) -> RemoteSettings {
    RemoteSettings {
        reconnect_backoff: Duration::from_millis(first),
        reconnect_backoff_max: Duration::from_millis(max),
        ..RemoteSettings::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_spans_both_sides() {
        let base = Duration::from_millis(1000);
        assert_eq!(jitter(base, 0), Duration::from_millis(800));
        assert_eq!(jitter(base, 400), Duration::from_millis(1200));
        assert_eq!(jitter(base, 200), base);
    }

    #[test]
    fn the_longest_pause_is_the_ceiling_with_the_most_jitter() {
        assert_eq!(
            longest_pause(&reconnect_settings(200, 5000)),
            Duration::from_millis(6000)
        );
        // A ceiling below the first delay is the first delay.
        assert_eq!(
            longest_pause(&reconnect_settings(500, 100)),
            Duration::from_millis(600)
        );
    }
}
