//! `[remote.cluster]`: how the transport carries cluster traffic
//! (`transport/cluster/`), for a node that is in a cluster. Nothing here
//! costs anything on a node that is not.

use serde::{Deserialize, Serialize};

use crate::transport::settings::RemoteSettingsError;

/// Bounds of the cluster traffic the transport carries
/// (`[remote.cluster]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterTransportSettings {
    /// Most bytes an association's control lane may hold unsent for a
    /// cluster frame to be queued behind them; past it the frame is
    /// dropped (cluster traffic tolerates loss, not unbounded queues).
    /// Must be below `limits.max_control_queue_bytes`, whose overflow
    /// quarantines, so cluster traffic never trips it. Default 64 KiB.
    pub queue_bytes: usize,
    /// Cluster frames a second one inbound connection may bring; the
    /// excess is dropped and counted. Default 100.
    pub inbound_frames_per_second: u32,
    /// Cluster frames one inbound connection may bring at once above the
    /// rate. Default 200.
    pub inbound_burst: u32,
}

impl Default for ClusterTransportSettings {
    fn default() -> Self {
        ClusterTransportSettings {
            queue_bytes: 64 * 1024,
            inbound_frames_per_second: 100,
            inbound_burst: 200,
        }
    }
}

impl ClusterTransportSettings {
    pub(crate) fn validate(
        &self,
        max_control_queue_bytes: usize,
    ) -> Result<(), RemoteSettingsError> {
        let out_of_range = |key, reason| Err(RemoteSettingsError::OutOfRange { key, reason });
        if self.queue_bytes < 1024 || self.queue_bytes >= max_control_queue_bytes {
            return out_of_range(
                "cluster.queue_bytes",
                "must be at least 1 KiB and below limits.max_control_queue_bytes",
            );
        }
        if self.inbound_frames_per_second == 0 {
            return out_of_range("cluster.inbound_frames_per_second", "must be at least 1");
        }
        if self.inbound_burst == 0 {
            return out_of_range("cluster.inbound_burst", "must be at least 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::transport::settings::{register_settings, RemoteSettings};

    #[test]
    fn cluster_settings_parse_and_bad_ones_name_their_key() {
        register_settings();
        let s = volley::Settings::from_toml_str("[remote.cluster]\ninbound_burst = 10\n").unwrap();
        let r = RemoteSettings::from_system_settings(&s).unwrap();
        assert_eq!(r.cluster.inbound_burst, 10);
        assert_eq!(r.cluster.queue_bytes, 64 * 1024, "the others keep defaults");
        let cases = [
            ("[remote.cluster]\nqueue_bytes = 10", "cluster.queue_bytes"),
            (
                "[remote.cluster]\nqueue_bytes = 65536\n[remote.limits]\nmax_control_queue_bytes = 65536",
                "cluster.queue_bytes",
            ),
            (
                "[remote.cluster]\ninbound_frames_per_second = 0",
                "cluster.inbound_frames_per_second",
            ),
            ("[remote.cluster]\ninbound_burst = 0", "cluster.inbound_burst"),
        ];
        for (text, key) in cases {
            let s = volley::Settings::from_toml_str(&format!("{text}\n")).unwrap();
            let e = RemoteSettings::from_system_settings(&s).unwrap_err();
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
    }
}
