//! The `[remote]` section of the actor system's settings.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::wire::{LARGE_MAX_FRAME_LEN, SMALL_MAX_FRAME_LEN};

mod cluster;
mod duration_keys;
mod limits;
pub(crate) mod reconnect;
mod removed_keys;
mod tls;
mod trust;
mod warnings;

pub use cluster::ClusterTransportSettings;
pub use limits::LimitSettings;
pub use tls::{TlsError, TlsSettings};
pub use trust::{ConnectBack, TrustSettings};
pub use warnings::RemoteSettingsWarning;

/// Write batching: the writer takes everything queued for a connection and
/// writes it with one system call. Under light load a message goes out at
/// once; under heavy load the calls are amortised over many messages
/// (Akka.NET's self-optimizing batching, without its timer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchingSettings {
    /// Most frames in one write. Default 4096. 1 writes every frame with
    /// its own system call, always from the lane's writer task: write
    /// batching off, which only a comparison wants. (It replaced
    /// `enabled = false`, which is still read, with a warning.)
    pub max_pending_writes: usize,
    /// Most bytes queued per lane before `tell` drops to dead letters and
    /// `send().await` waits (backpressure). Default 4 MiB.
    pub max_pending_bytes: usize,
    /// After waking up, wait this long for more frames before writing.
    /// Default 0: write as soon as the writer is free, which already batches
    /// whatever queued during the previous write.
    #[serde(with = "humantime_serde")]
    pub flush_interval: Duration,
    /// Messages sent by actors are written by the dispatcher thread that
    /// ran them, once it runs out of work or after 4 activations, instead
    /// of waking the writer task (see `volley::batch_end`). Saves a thread
    /// wake-up per batch; the price is that a handler which keeps its
    /// thread busy long after sending (blocking or heavy computation)
    /// holds its messages back that long, as it holds back every other
    /// actor on that thread. Default true; ignored (off) when
    /// `max_pending_writes` is 1 or `flush_interval` is above 0.
    pub dispatcher_writes: bool,
}

impl BatchingSettings {
    /// Whether a write may take more than one frame.
    pub(crate) fn batches(&self) -> bool {
        self.max_pending_writes > 1
    }
}

impl Default for BatchingSettings {
    fn default() -> Self {
        BatchingSettings {
            max_pending_writes: 4096,
            max_pending_bytes: 4 * 1024 * 1024,
            flush_interval: Duration::ZERO,
            dispatcher_writes: true,
        }
    }
}

/// Settings of the remoting transport.
///
/// Durations are written with units (`handshake_timeout = "5s"`,
/// `"200ms"`, `"50us"`). The keys they replaced, whole numbers of
/// milliseconds or microseconds (`handshake_timeout_ms = 5000`), are still
/// read by [`Self::from_system_settings`], with a deprecation warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteSettings {
    /// Interface to listen on. Default `127.0.0.1`.
    pub bind_host: String,
    /// Port to listen on; 0 picks a free one. Default 0.
    pub port: u16,
    /// Host other nodes use to reach this one (behind NAT, in a container);
    /// default: `bind_host`.
    pub canonical_host: Option<String>,
    /// Port other nodes use; default (or 0): the bound port.
    pub canonical_port: Option<u16>,
    /// Batching and backpressure.
    pub batching: BatchingSettings,
    /// Messages whose frame is larger travel on the large-message lane, so
    /// they do not hold up small ones. Default 64 KiB.
    pub large_message_threshold: u32,
    /// Largest frame on the large lane; a bigger message is refused at the
    /// sender. Default 16 MiB.
    pub max_frame_size: u32,
    /// Accept remote spawn requests. Default false.
    pub remote_spawn: bool,
    /// Shared secret of the nodes that may talk to this one. When set,
    /// both sides of every connection prove they know it with a challenge
    /// and response in the handshake (docs/wire-protocol.md §6.1); the
    /// secret itself never crosses the wire. Nodes must all have it or all
    /// not. The key `auth_token` is read as an alias. Default none.
    #[serde(alias = "auth_token")]
    pub secret: Option<String>,
    /// How long a handshake may take. Default 5 s.
    #[serde(with = "humantime_serde")]
    pub handshake_timeout: Duration,
    /// Pause before the first reconnect attempt; it doubles with every
    /// further failed attempt (±20 % jitter). Default 200 ms.
    #[serde(with = "humantime_serde")]
    pub reconnect_backoff: Duration,
    /// Longest pause between reconnect attempts. Default 5 s.
    #[serde(with = "humantime_serde")]
    pub reconnect_backoff_max: Duration,
    /// Heartbeats and failure detection (`[remote.failure_detector]`).
    pub failure_detector: FailureDetectorSettings,
    /// How long `ActorSystem::terminate` waits for queued messages to be
    /// written before it tells the peers it leaves and closes. Default
    /// 2 s.
    #[serde(with = "humantime_serde")]
    pub shutdown_flush_timeout: Duration,
    /// Most system messages (watch, unwatch, death notices, stop) waiting
    /// for the peer's ack per association; past it the peer's incarnation
    /// is quarantined. Default 20000 (Akka's `system-message-buffer-size`).
    pub system_message_buffer_size: usize,
    /// How long a system message may wait for its ack before the peer's
    /// incarnation is quarantined. Default 6 h (Akka Artery's
    /// `give-up-system-message-after`).
    #[serde(with = "humantime_serde")]
    pub give_up_system_message_after: Duration,
    /// How long an association may carry nothing but heartbeats, both
    /// ways, with no remote watch or unacknowledged system message
    /// between the two nodes, before it is stopped: its connections
    /// close, its writer and heartbeat tasks end, its buffers are freed.
    /// The next message either way starts it again. 0 never stops one.
    /// Default 5 min (Akka Artery's `stop-idle-outbound-after`).
    #[serde(with = "humantime_serde")]
    pub stop_idle_outbound_after: Duration,
    /// How long an association that remembers a quarantined incarnation
    /// stays in the table once it is stopped for idleness, so that the
    /// incarnation stays refused. Past it the association is let go of
    /// like any stopped one (removed once nothing refers to it), and with
    /// it what it knew of that node's incarnations: should the quarantined
    /// incarnation come back after that, it is associated with again. 0
    /// keeps it for ever. Default 1 h (Akka Artery's
    /// `remove-quarantined-association-after`).
    #[serde(with = "humantime_serde")]
    pub remove_quarantined_association_after: Duration,
    /// How long a death notice to a remote watcher's node waits for that
    /// node to confirm it has delivered the user messages sent to it
    /// before the death (a Flush on each user lane in use), so that the
    /// watcher gets them before `Terminated`; past it the notice goes
    /// anyway. 0 sends notices at once, unordered with user messages.
    /// Default 3 s (Akka Artery's `death-watch-notification-flush-timeout`).
    #[serde(with = "humantime_serde")]
    pub death_watch_notification_flush_timeout: Duration,
    /// With a membership authority (a cluster), how long after a member
    /// that left gracefully is removed its incarnation is quarantined:
    /// time for it to learn of its removal over the association and leave
    /// by itself. A member removed as Down is quarantined at once. Default
    /// 5 s (Akka's `quarantine-removed-node-after`).
    #[serde(with = "humantime_serde")]
    pub quarantine_removed_node_after: Duration,
    /// How far a peer may make this node grow (`[remote.limits]`).
    pub limits: LimitSettings,
    /// What peers may make this node do (`[remote.trust]`): dialing back,
    /// refs on third nodes, untrusted mode.
    pub trust: TrustSettings,
    /// TLS on every connection (`[remote.tls]`).
    pub tls: TlsSettings,
    /// Bounds of cluster traffic (`[remote.cluster]`).
    pub cluster: ClusterTransportSettings,
}

impl Default for RemoteSettings {
    fn default() -> Self {
        RemoteSettings {
            bind_host: "127.0.0.1".into(),
            port: 0,
            canonical_host: None,
            canonical_port: None,
            batching: BatchingSettings::default(),
            large_message_threshold: 64 * 1024,
            max_frame_size: LARGE_MAX_FRAME_LEN,
            remote_spawn: false,
            secret: None,
            handshake_timeout: Duration::from_secs(5),
            reconnect_backoff: Duration::from_millis(200),
            reconnect_backoff_max: Duration::from_secs(5),
            failure_detector: FailureDetectorSettings::default(),
            shutdown_flush_timeout: Duration::from_secs(2),
            system_message_buffer_size: 20_000,
            give_up_system_message_after: Duration::from_secs(6 * 60 * 60),
            stop_idle_outbound_after: Duration::from_secs(5 * 60),
            remove_quarantined_association_after: Duration::from_secs(60 * 60),
            death_watch_notification_flush_timeout: Duration::from_secs(3),
            quarantine_removed_node_after: Duration::from_secs(5),
            limits: LimitSettings::default(),
            trust: TrustSettings::default(),
            tls: TlsSettings::default(),
            cluster: ClusterTransportSettings::default(),
        }
    }
}

/// A `[remote]` section that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteSettingsError {
    /// Wrong shape or type.
    #[error("invalid [remote] settings: {0}")]
    Invalid(String),
    /// Out of range.
    #[error("invalid [remote] setting {key}: {reason}")]
    OutOfRange {
        /// The key.
        key: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A duration that cannot be read, or given under both its deprecated
    /// key and the key that replaced it.
    #[error(transparent)]
    Duration(#[from] volley::DurationKeyError),
    /// A removed key and the key that replaced it, both given.
    #[error(
        "invalid [remote] settings: both {old_key} (deprecated) and {key} are set; keep only {key}"
    )]
    BothKeys {
        /// The deprecated key.
        old_key: &'static str,
        /// The key that replaced it.
        key: &'static str,
    },
}

/// The name of this crate's section in the actor system's settings.
pub const SECTION: &str = "remote";

/// Makes the `[remote]` section known to `volley::Settings`, so settings
/// that hold it parse. Call it before parsing such settings; every entry
/// point of this crate that reads settings calls it too. Idempotent.
pub fn register_settings() {
    volley::Settings::register_section(SECTION).expect("`remote` is not a core settings key");
}

impl RemoteSettings {
    /// Reads the `[remote]` section of the system's settings (defaults when
    /// absent). A deprecated duration key is read as the key that replaced
    /// it, and logged as deprecated.
    pub fn from_system_settings(settings: &volley::Settings) -> Result<Self, RemoteSettingsError> {
        register_settings();
        let parsed = match settings.extensions.get(SECTION) {
            None => RemoteSettings::default(),
            Some(value) => {
                let mut section = value.clone();
                let mut deprecated = duration_keys::read_duration_keys(&mut section)?;
                deprecated.extend(removed_keys::read_removed_keys(&mut section)?);
                for deprecated in deprecated {
                    tracing::warn!("{deprecated}");
                }
                section
                    .try_into()
                    .map_err(|e: toml::de::Error| RemoteSettingsError::Invalid(e.to_string()))?
            }
        };
        parsed.validate()?;
        Ok(parsed)
    }

    /// Checks ranges the types do not. Settings that work but invite
    /// trouble are accepted, with a warning logged for each
    /// ([`Self::warnings`]).
    pub fn validate(&self) -> Result<(), RemoteSettingsError> {
        self.validate_ranges()?;
        self.log_warnings();
        Ok(())
    }

    fn validate_ranges(&self) -> Result<(), RemoteSettingsError> {
        if self.large_message_threshold < 1024 || self.large_message_threshold > SMALL_MAX_FRAME_LEN
        {
            return Err(RemoteSettingsError::OutOfRange {
                key: "large_message_threshold",
                reason: "must be between 1 KiB and 256 KiB",
            });
        }
        if self.max_frame_size < self.large_message_threshold
            || self.max_frame_size > LARGE_MAX_FRAME_LEN
        {
            return Err(RemoteSettingsError::OutOfRange {
                key: "max_frame_size",
                reason: "must be at least large_message_threshold and at most 16 MiB",
            });
        }
        if self.reconnect_backoff_max < self.reconnect_backoff {
            return Err(RemoteSettingsError::OutOfRange {
                key: "reconnect_backoff_max",
                reason: "must be at least reconnect_backoff",
            });
        }
        if self.batching.max_pending_writes == 0 {
            return Err(RemoteSettingsError::OutOfRange {
                key: "batching.max_pending_writes",
                reason: "must be at least 1",
            });
        }
        if self.batching.max_pending_bytes < 64 * 1024 {
            return Err(RemoteSettingsError::OutOfRange {
                key: "batching.max_pending_bytes",
                reason: "must be at least 64 KiB",
            });
        }
        if self.secret.as_deref() == Some("") {
            return Err(RemoteSettingsError::OutOfRange {
                key: "secret",
                reason: "must not be empty (leave it out to turn authentication off)",
            });
        }
        if self.system_message_buffer_size == 0 {
            return Err(RemoteSettingsError::OutOfRange {
                key: "system_message_buffer_size",
                reason: "must be at least 1",
            });
        }
        if self.give_up_system_message_after < Duration::from_millis(1) {
            return Err(RemoteSettingsError::OutOfRange {
                key: "give_up_system_message_after",
                reason: "must be at least 1 ms",
            });
        }
        if !self.stop_idle_outbound_after.is_zero()
            && self.stop_idle_outbound_after < 2 * self.failure_detector.heartbeat_interval
        {
            return Err(RemoteSettingsError::OutOfRange {
                key: "stop_idle_outbound_after",
                reason: "must be 0 (never) or at least two heartbeat intervals",
            });
        }
        self.limits
            .validate(self.failure_detector.heartbeat_interval)?;
        self.trust.validate()?;
        self.tls.validate()?;
        self.cluster.validate(self.limits.max_control_queue_bytes)?;
        self.failure_detector.validate()
    }
}

/// Heartbeats and the phi accrual failure detector that watches them (see
/// `transport/liveness/failure_detector.rs`). The defaults are those of Akka's remote
/// watch failure detector: a node that stops sending heartbeats is
/// reported a little over `heartbeat_interval` plus
/// `acceptable_heartbeat_pause` after its last one (about 11.6 s), long
/// enough that a stalled process or a short network hiccup is not taken
/// for a crash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FailureDetectorSettings {
    /// How often each node sends a heartbeat on the control lane of every
    /// association; also the detector's first guess of the interval
    /// between arrivals. Default 1 s.
    #[serde(with = "humantime_serde")]
    pub heartbeat_interval: Duration,
    /// Phi above which a node is unreachable. Lower detects a crash sooner
    /// and suspects a live node more often. Default 10.0.
    pub threshold: f64,
    /// Silence tolerated on top of the usual interval before phi rises:
    /// covers lost heartbeats, pauses and bursts of load. Default 10 s.
    #[serde(with = "humantime_serde")]
    pub acceptable_heartbeat_pause: Duration,
    /// Floor of the standard deviation of intervals, so that a very regular
    /// history does not make phi jump at the first late heartbeat.
    /// Default 100 ms.
    #[serde(with = "humantime_serde")]
    pub min_std_deviation: Duration,
    /// How many recent intervals the statistics use. Default 200.
    pub max_sample_size: usize,
}

impl Default for FailureDetectorSettings {
    fn default() -> Self {
        FailureDetectorSettings {
            heartbeat_interval: Duration::from_secs(1),
            threshold: 10.0,
            acceptable_heartbeat_pause: Duration::from_secs(10),
            min_std_deviation: Duration::from_millis(100),
            max_sample_size: 200,
        }
    }
}

impl FailureDetectorSettings {
    fn validate(&self) -> Result<(), RemoteSettingsError> {
        let out_of_range = |key, reason| Err(RemoteSettingsError::OutOfRange { key, reason });
        if self.heartbeat_interval < Duration::from_millis(1) {
            return out_of_range(
                "failure_detector.heartbeat_interval",
                "must be at least 1 ms",
            );
        }
        if !(self.threshold.is_finite() && self.threshold > 0.0) {
            return out_of_range(
                "failure_detector.threshold",
                "must be a finite number above 0",
            );
        }
        if self.min_std_deviation < Duration::from_millis(1) {
            return out_of_range(
                "failure_detector.min_std_deviation",
                "must be at least 1 ms",
            );
        }
        if self.max_sample_size == 0 {
            return out_of_range("failure_detector.max_sample_size", "must be at least 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_toml_overrides() {
        register_settings();
        let s = volley::Settings::from_toml_str(
            "[remote]\nport = 2552\nremote_spawn = true\n[remote.batching]\nmax_pending_writes = 1\ndispatcher_writes = false\n",
        )
        .unwrap();
        let r = RemoteSettings::from_system_settings(&s).unwrap();
        assert_eq!(r.port, 2552);
        assert!(r.remote_spawn);
        assert!(!r.batching.batches());
        assert!(!r.batching.dispatcher_writes);
        assert!(BatchingSettings::default().dispatcher_writes);
        assert!(BatchingSettings::default().batches());
        assert_eq!(BatchingSettings::default().max_pending_writes, 4096);
    }

    #[test]
    fn bad_sections_are_clear_errors() {
        register_settings();
        let s = volley::Settings::from_toml_str("[remote]\nprot = 1\n").unwrap();
        let e = RemoteSettings::from_system_settings(&s).unwrap_err();
        assert!(e.to_string().contains("prot"), "{e}");
        let s =
            volley::Settings::from_toml_str("[remote]\nlarge_message_threshold = 10\n").unwrap();
        let e = RemoteSettings::from_system_settings(&s).unwrap_err();
        assert!(e.to_string().contains("large_message_threshold"), "{e}");
        let s = volley::Settings::from_toml_str(
            "[remote]\nreconnect_backoff = \"500ms\"\nreconnect_backoff_max = \"100ms\"\n",
        )
        .unwrap();
        let e = RemoteSettings::from_system_settings(&s).unwrap_err();
        assert!(e.to_string().contains("reconnect_backoff_max:"), "{e}");
    }

    #[test]
    fn failure_detector_defaults_and_overrides() {
        register_settings();
        let defaults = FailureDetectorSettings::default();
        assert_eq!(defaults.heartbeat_interval, Duration::from_millis(1000));
        assert_eq!(defaults.threshold, 10.0);
        assert_eq!(
            defaults.acceptable_heartbeat_pause,
            Duration::from_millis(10_000)
        );
        assert_eq!(defaults.min_std_deviation, Duration::from_millis(100));
        assert_eq!(defaults.max_sample_size, 200);
        let s = volley::Settings::from_toml_str(
            "[remote.failure_detector]\nheartbeat_interval = \"50ms\"\nthreshold = 8.5\n",
        )
        .unwrap();
        let r = RemoteSettings::from_system_settings(&s).unwrap();
        assert_eq!(
            r.failure_detector.heartbeat_interval,
            Duration::from_millis(50)
        );
        assert_eq!(r.failure_detector.threshold, 8.5);
        // Keys not given keep their defaults.
        assert_eq!(
            r.failure_detector.acceptable_heartbeat_pause,
            Duration::from_secs(10)
        );
    }

    #[test]
    fn bad_failure_detector_settings_name_the_key() {
        register_settings();
        let cases = [
            (
                "heartbeat_interval = \"0s\"",
                "failure_detector.heartbeat_interval",
            ),
            (
                "heartbeat_interval = \"500us\"",
                "failure_detector.heartbeat_interval",
            ),
            ("threshold = 0.0", "failure_detector.threshold"),
            ("threshold = -1.0", "failure_detector.threshold"),
            ("threshold = nan", "failure_detector.threshold"),
            ("threshold = inf", "failure_detector.threshold"),
            (
                "min_std_deviation = \"0ms\"",
                "failure_detector.min_std_deviation",
            ),
            ("max_sample_size = 0", "failure_detector.max_sample_size"),
            ("heartbeat_intervall_ms = 5", "heartbeat_intervall_ms"),
        ];
        for (line, key) in cases {
            let s =
                volley::Settings::from_toml_str(&format!("[remote.failure_detector]\n{line}\n"))
                    .unwrap();
            let e = RemoteSettings::from_system_settings(&s).unwrap_err();
            assert!(e.to_string().contains(key), "{line}: {e}");
        }
    }
}
