//! `[remote]` settings that work but invite trouble: `validate` accepts
//! them and logs a warning for each, since refusing them would break
//! configurations that were legal before the check existed.

use std::fmt;
use std::time::Duration;

use super::reconnect::longest_pause;
use super::RemoteSettings;

/// A combination of `[remote]` settings that works but is likely to hurt,
/// which [`RemoteSettings::validate`] logs at warn level, or a deprecated
/// key, which [`RemoteSettings::from_system_settings`] logs when it reads
/// one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteSettingsWarning {
    /// A lane may pause longer between reconnect attempts (the back-off
    /// ceiling with its jitter) than a peer's failure detector waits for
    /// heartbeats: after an outage shorter than the pause, the peer may
    /// give this node up before its control lane tries again.
    BackoffOutlastsHeartbeatPause {
        /// `reconnect_backoff_max` plus its 20 % jitter.
        longest_pause: Duration,
        /// `failure_detector.acceptable_heartbeat_pause`.
        acceptable_pause: Duration,
    },
    /// A key that left the settings, still read: `instead` says what
    /// does what it did. It will stop being read in a later release. Only
    /// reading settings finds this one, as the next.
    RemovedKey {
        /// The key, e.g. `batching.enabled`.
        old_key: &'static str,
        /// What to write instead.
        instead: &'static str,
    },
    /// A duration given under the key, in milliseconds or microseconds,
    /// that a key with units replaced. It is read as that key; it will
    /// stop being read in a later release. Only reading settings finds
    /// this one: [`RemoteSettings::warnings`] does not list it, as the
    /// settings do not remember which key their values came from.
    /// The keys are named in full, e.g.
    /// `remote.failure_detector.heartbeat_interval_ms`.
    DeprecatedKey(volley::DeprecatedDurationKey),
}

impl fmt::Display for RemoteSettingsWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteSettingsWarning::BackoffOutlastsHeartbeatPause {
                longest_pause,
                acceptable_pause,
            } => write!(
                f,
                "reconnect_backoff_max lets a lane pause up to {longest_pause:?} (with jitter) between reconnect attempts, longer than failure_detector.acceptable_heartbeat_pause ({acceptable_pause:?}): after a short outage a peer may give this node up before its control lane dials again; keep the ceiling at most the pause divided by 1.2"
            ),
            RemoteSettingsWarning::RemovedKey { old_key, instead } => {
                write!(f, "[remote] setting {old_key} is deprecated: {instead}")
            }
            RemoteSettingsWarning::DeprecatedKey(deprecated) => write!(f, "{deprecated}"),
        }
    }
}

impl RemoteSettings {
    /// What `validate` warns about in these settings (it refuses nothing
    /// listed here).
    pub fn warnings(&self) -> Vec<RemoteSettingsWarning> {
        let mut warnings = Vec::new();
        let longest_pause = longest_pause(self);
        let acceptable_pause = self.failure_detector.acceptable_heartbeat_pause;
        if longest_pause > acceptable_pause {
            warnings.push(RemoteSettingsWarning::BackoffOutlastsHeartbeatPause {
                longest_pause,
                acceptable_pause,
            });
        }
        warnings
    }

    /// Logs each of [`Self::warnings`].
    pub(crate) fn log_warnings(&self) {
        for warning in self.warnings() {
            tracing::warn!("{warning}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::FailureDetectorSettings;

    fn settings(backoff_max_ms: u64, pause_ms: u64) -> RemoteSettings {
        RemoteSettings {
            reconnect_backoff_max: Duration::from_millis(backoff_max_ms),
            failure_detector: FailureDetectorSettings {
                acceptable_heartbeat_pause: Duration::from_millis(pause_ms),
                ..FailureDetectorSettings::default()
            },
            ..RemoteSettings::default()
        }
    }

    #[test]
    fn the_defaults_warn_about_nothing() {
        assert_eq!(RemoteSettings::default().warnings(), vec![]);
    }

    /// The configuration: a 5 s ceiling against a 1 s pause is
    /// accepted, with a warning that names both keys.
    #[test]
    fn a_ceiling_past_the_pause_is_accepted_with_a_warning() {
        let s = settings(5000, 1000);
        s.validate()
            .expect("legal before the check: still accepted");
        let warnings = s.warnings();
        assert_eq!(
            warnings,
            vec![RemoteSettingsWarning::BackoffOutlastsHeartbeatPause {
                longest_pause: Duration::from_secs(6),
                acceptable_pause: Duration::from_secs(1),
            }]
        );
        let text = warnings[0].to_string();
        assert!(text.contains("reconnect_backoff_max"), "{text}");
        assert!(text.contains("acceptable_heartbeat_pause"), "{text}");
    }

    /// The jitter counts: a ceiling equal to the pause can still pause
    /// past it.
    #[test]
    fn the_jitter_counts() {
        assert_eq!(settings(1000, 1000).warnings().len(), 1);
        assert_eq!(settings(1000, 1200).warnings(), vec![]);
    }
}
