//! The `[remote]` settings that are durations are written with units
//! (`heartbeat_interval = "1s"`, `"200ms"`, `"50us"`) and read by
//! `humantime-serde`. Each replaced a key that held a whole number of
//! milliseconds or microseconds (`heartbeat_interval_ms = 1000`); such a
//! key is still read, with a deprecation warning, by the core's
//! [`volley::DurationKeys`], the same rules as the core's own settings.

use volley::DurationKeys;

use super::warnings::RemoteSettingsWarning;
use super::SECTION;
use crate::transport::settings::RemoteSettingsError;

/// Each duration key (with its table, if any) and the deprecated key it
/// replaced; the latter's suffix gives its unit.
const DURATION_KEYS: DurationKeys = DurationKeys::new(&[
    ("handshake_timeout", "handshake_timeout_ms"),
    ("reconnect_backoff", "reconnect_backoff_ms"),
    ("reconnect_backoff_max", "reconnect_backoff_max_ms"),
    ("shutdown_flush_timeout", "shutdown_flush_timeout_ms"),
    (
        "give_up_system_message_after",
        "give_up_system_message_after_ms",
    ),
    ("stop_idle_outbound_after", "stop_idle_outbound_after_ms"),
    (
        "remove_quarantined_association_after",
        "remove_quarantined_association_after_ms",
    ),
    (
        "death_watch_notification_flush_timeout",
        "death_watch_notification_flush_timeout_ms",
    ),
    ("batching.flush_interval", "batching.flush_interval_us"),
    (
        "failure_detector.heartbeat_interval",
        "failure_detector.heartbeat_interval_ms",
    ),
    (
        "failure_detector.acceptable_heartbeat_pause",
        "failure_detector.acceptable_heartbeat_pause_ms",
    ),
    (
        "failure_detector.min_std_deviation",
        "failure_detector.min_std_deviation_ms",
    ),
    ("limits.idle_timeout", "limits.idle_timeout_ms"),
    ("tls.refresh_interval", "tls.refresh_interval_ms"),
]);

/// Rewrites the deprecated duration keys of a `[remote]` section into
/// their keys with units and checks every duration written with units.
/// Returns a deprecation warning for each deprecated key found.
pub(super) fn read_duration_keys(
    section: &mut toml::Value,
) -> Result<Vec<RemoteSettingsWarning>, RemoteSettingsError> {
    // A section that is not a table is serde's to report.
    let Some(table) = section.as_table_mut() else {
        return Ok(Vec::new());
    };
    let deprecated = DURATION_KEYS.read(table, SECTION)?;
    Ok(deprecated
        .into_iter()
        .map(RemoteSettingsWarning::DeprecatedKey)
        .collect())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::transport::settings::{register_settings, RemoteSettings};

    fn read(toml: &str) -> Result<RemoteSettings, RemoteSettingsError> {
        register_settings();
        RemoteSettings::from_system_settings(&volley::Settings::from_toml_str(toml).unwrap())
    }

    /// `[remote]` TOML that sets `key` (perhaps in a subsection) to `value`.
    fn section_with(key: &str, value: &str) -> String {
        match key.split_once('.') {
            None => format!("[remote]\n{key} = {value}\n"),
            Some((subsection, name)) => format!("[remote.{subsection}]\n{name} = {value}\n"),
        }
    }

    #[test]
    fn durations_are_read_with_units() {
        let r = read(concat!(
            "[remote]\nhandshake_timeout = \"200ms\"\nstop_idle_outbound_after = \"1h 30m\"\n",
            "[remote.failure_detector]\nheartbeat_interval = \"1s\"\n",
            "[remote.batching]\nflush_interval = \"50us\"\n",
        ))
        .unwrap();
        assert_eq!(r.handshake_timeout, Duration::from_millis(200));
        assert_eq!(r.stop_idle_outbound_after, Duration::from_secs(90 * 60));
        assert_eq!(
            r.failure_detector.heartbeat_interval,
            Duration::from_secs(1)
        );
        assert_eq!(r.batching.flush_interval, Duration::from_micros(50));
    }

    /// Every deprecated key still reads as its key with units, in its
    /// unit, and is reported with both names.
    #[test]
    fn each_deprecated_key_reads_the_same_value_with_a_warning() {
        for &(key, old_key) in DURATION_KEYS.pairs() {
            let unit = if old_key.ends_with("_us") { "us" } else { "ms" };
            let old = section_with(old_key, "4000");
            let new = section_with(key, &format!("\"4000{unit}\""));
            let from_old = read(&old).unwrap();
            assert_eq!(from_old, read(&new).unwrap(), "{old_key}");
            assert_ne!(from_old, RemoteSettings::default(), "{old_key}");
            let mut section: toml::Value =
                toml::from_str::<toml::Table>(&old).unwrap()["remote"].clone();
            let warnings = read_duration_keys(&mut section).unwrap();
            let warning = RemoteSettingsWarning::DeprecatedKey(volley::DeprecatedDurationKey {
                old_key: format!("remote.{old_key}"),
                key: format!("remote.{key}"),
                value: format!("4000{unit}"),
            });
            assert_eq!(warnings, vec![warning.clone()]);
            let text = warning.to_string();
            assert!(
                text.contains(&format!("remote.{old_key}"))
                    && text.contains(&format!(" remote.{key} = ")),
                "{text}"
            );
        }
    }

    #[test]
    fn a_deprecated_key_and_its_replacement_together_are_an_error_naming_both() {
        let e = read(
            "[remote.failure_detector]\nheartbeat_interval_ms = 500\nheartbeat_interval = \"1s\"\n",
        )
        .unwrap_err();
        assert!(
            matches!(
                &e,
                RemoteSettingsError::Duration(volley::DurationKeyError::BothKeys { old_key, key })
                    if old_key == "remote.failure_detector.heartbeat_interval_ms"
                        && key == "remote.failure_detector.heartbeat_interval"
            ),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("heartbeat_interval_ms") && text.contains("heartbeat_interval "),
            "{text}"
        );
    }

    #[test]
    fn a_badly_written_duration_is_an_error_naming_its_key() {
        let cases = [
            (
                "limits.idle_timeout = \"2 parsecs\"",
                "limits.idle_timeout",
                "parsecs",
            ),
            ("handshake_timeout = \"5\"", "handshake_timeout", "\"5\""),
            (
                "handshake_timeout = 5000",
                "handshake_timeout",
                "with units",
            ),
            (
                "handshake_timeout_ms = \"5s\"",
                "handshake_timeout_ms",
                "whole number of milliseconds",
            ),
            (
                "handshake_timeout_ms = -1",
                "handshake_timeout_ms",
                "whole number of milliseconds",
            ),
            (
                "batching.flush_interval_us = 1.5",
                "batching.flush_interval_us",
                "whole number of microseconds",
            ),
        ];
        for (line, key, what) in cases {
            let (key_part, value) = line.split_once(" = ").unwrap();
            let e = read(&section_with(key_part, value)).unwrap_err();
            assert!(
                matches!(&e, RemoteSettingsError::Duration(volley::DurationKeyError::BadDuration { key: k, .. })
                    if *k == format!("remote.{key}")),
                "{line}: {e}"
            );
            assert!(e.to_string().contains(what), "{line}: {e}");
        }
    }

    /// The defaults are the same durations as the millisecond defaults
    /// they replaced.
    #[test]
    fn the_defaults_are_the_old_ones() {
        let r = RemoteSettings::default();
        let ms = Duration::from_millis;
        assert_eq!(r.handshake_timeout, ms(5000));
        assert_eq!(r.reconnect_backoff, ms(200));
        assert_eq!(r.reconnect_backoff_max, ms(5000));
        assert_eq!(r.shutdown_flush_timeout, ms(2000));
        assert_eq!(r.give_up_system_message_after, ms(6 * 60 * 60 * 1000));
        assert_eq!(r.stop_idle_outbound_after, ms(5 * 60 * 1000));
        assert_eq!(r.remove_quarantined_association_after, ms(60 * 60 * 1000));
        assert_eq!(r.death_watch_notification_flush_timeout, ms(3000));
        assert_eq!(r.batching.flush_interval, Duration::from_micros(0));
        assert_eq!(r.failure_detector.heartbeat_interval, ms(1000));
        assert_eq!(r.failure_detector.acceptable_heartbeat_pause, ms(10_000));
        assert_eq!(r.failure_detector.min_std_deviation, ms(100));
        assert_eq!(r.limits.idle_timeout, ms(60_000));
        assert_eq!(r.tls.refresh_interval, ms(10 * 60 * 1000));
    }

    /// Settings written out come back the same, with units.
    #[test]
    fn durations_are_written_with_units() {
        let text = toml::to_string(&RemoteSettings::default()).unwrap();
        assert!(text.contains("handshake_timeout = \"5s\""), "{text}");
        assert!(
            text.contains("give_up_system_message_after = \"6h\""),
            "{text}"
        );
        assert!(text.contains("flush_interval = \"0s\""), "{text}");
        let back: RemoteSettings = toml::from_str(&text).unwrap();
        assert_eq!(back, RemoteSettings::default());
    }
}
