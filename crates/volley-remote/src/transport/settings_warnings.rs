//! `[remote]` settings that work but invite trouble: `validate` accepts
//! them and logs a warning for each, since refusing them would break
//! configurations that were legal before the check existed.

use std::fmt;

use crate::transport::outbound::backoff::longest_pause;
use crate::transport::settings::RemoteSettings;

/// A combination of `[remote]` settings that works but is likely to hurt;
/// [`RemoteSettings::validate`] logs each at warn level.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteSettingsWarning {
    /// A lane may pause longer between reconnect attempts (the back-off
    /// ceiling with its jitter) than a peer's failure detector waits for
    /// heartbeats: after an outage shorter than the pause, the peer may
    /// give this node up before its control lane tries again.
    BackoffOutlastsHeartbeatPause {
        /// `reconnect_backoff_max_ms` plus its 20 % jitter.
        longest_pause_ms: u64,
        /// `failure_detector.acceptable_heartbeat_pause_ms`.
        acceptable_pause_ms: u64,
    },
}

impl fmt::Display for RemoteSettingsWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteSettingsWarning::BackoffOutlastsHeartbeatPause {
                longest_pause_ms,
                acceptable_pause_ms,
            } => write!(
                f,
                "reconnect_backoff_max_ms lets a lane pause up to {longest_pause_ms} ms (with jitter) between reconnect attempts, longer than failure_detector.acceptable_heartbeat_pause_ms ({acceptable_pause_ms} ms): after a short outage a peer may give this node up before its control lane dials again; keep the ceiling at most the pause divided by 1.2"
            ),
        }
    }
}

impl RemoteSettings {
    /// What `validate` warns about in these settings (it refuses nothing
    /// listed here).
    pub fn warnings(&self) -> Vec<RemoteSettingsWarning> {
        let mut warnings = Vec::new();
        let longest_pause_ms = u64::try_from(longest_pause(self).as_millis()).unwrap_or(u64::MAX);
        let acceptable_pause_ms = self.failure_detector.acceptable_heartbeat_pause_ms;
        if longest_pause_ms > acceptable_pause_ms {
            warnings.push(RemoteSettingsWarning::BackoffOutlastsHeartbeatPause {
                longest_pause_ms,
                acceptable_pause_ms,
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
            reconnect_backoff_max_ms: backoff_max_ms,
            failure_detector: FailureDetectorSettings {
                acceptable_heartbeat_pause_ms: pause_ms,
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
                longest_pause_ms: 6000,
                acceptable_pause_ms: 1000,
            }]
        );
        let text = warnings[0].to_string();
        assert!(text.contains("reconnect_backoff_max_ms"), "{text}");
        assert!(text.contains("acceptable_heartbeat_pause_ms"), "{text}");
    }

    /// The jitter counts: a ceiling equal to the pause can still pause
    /// past it.
    #[test]
    fn the_jitter_counts() {
        assert_eq!(settings(1000, 1000).warnings().len(), 1);
        assert_eq!(settings(1000, 1200).warnings(), vec![]);
    }
}
