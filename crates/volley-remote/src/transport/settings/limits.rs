//! `[remote.limits]`: how far one peer may make this node grow. Each limit
//! has a default that a well-behaved volley peer never reaches; a hostile
//! or broken peer that does gets a clear, rate-limited warning and loses
//! its connection, its message or its association (see the "Limits"
//! section of docs/wire-protocol.md for what happens past each).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::transport::settings::RemoteSettingsError;

/// Limits a peer cannot grow this node past (`[remote.limits]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    /// Most refs a peer may declare on one inbound connection (re-declaring
    /// an id does not count again). The uid-less refs to this node's paths
    /// (from `resolve`), which the connection keeps by path as well, count
    /// on their own against the same number, bound to an actor or not.
    /// Past it the connection is closed with a protocol error. Default
    /// 16384.
    pub max_imported_refs: usize,
    /// Most bytes the refs a peer declared on one inbound connection may
    /// keep in memory, as the connection estimates them: every ref counts
    /// its slot, a ref to a remote actor (or a reply handle, or a
    /// placeholder) its handle, route and path, a uid-less ref to a local
    /// path its path (docs/wire-protocol.md §14). Bounds what long paths
    /// can cost, which `max_imported_refs` alone does not, and with the
    /// connection caps what peers can make this node hold. Past it the
    /// connection is closed like past `max_imported_refs`, and counted in
    /// `volley_remote_import_refusals_total`. A volley peer reaches it
    /// only with thousands of refs to remote actors on one lane. Between
    /// 64 KiB and 1 GiB. Default 4 MiB.
    pub max_imported_ref_bytes: usize,
    /// Most lasting refs this node declares to one peer on one lane. The
    /// lane's table is kept across reconnects; it lets go of the refs of
    /// local actors that have stopped and of remote actors whose node's
    /// incarnation is gone (restarted, quarantined, left). Past it a ref
    /// that needs a new id is declared again with each message that
    /// carries it. Keep it at most the peers' `max_imported_refs` (and
    /// what they declare within their `max_imported_ref_bytes`).
    /// Default 16384.
    pub max_exported_refs: usize,
    /// Deepest nesting of a serde payload (structs, enums, sequences, maps,
    /// options inside each other). A deeper payload is one undeliverable
    /// dead letter instead of a stack overflow. Default 128.
    pub max_decode_depth: u32,
    /// Most bytes the elements of one payload's sequences and maps may take
    /// in memory (each element counted at its type's size, at least one
    /// byte). Bounds what a payload can cost whose elements take more
    /// memory than input, or none (`Vec<()>`). Past it the message is one
    /// undeliverable dead letter. Default 32 MiB.
    pub max_decode_collection_bytes: usize,
    /// Most inbound connections open at once. Past it a new connection is
    /// closed right after it is accepted, before anything is read.
    /// Default 1024.
    pub max_inbound_connections: usize,
    /// Most inbound connections open at once from one IP address.
    /// Default 256 (a node uses three connections per peer; nodes that
    /// share a host share its address).
    pub max_inbound_connections_per_ip: usize,
    /// An inbound connection over which nothing arrived from its peer's
    /// incarnation, on any of that incarnation's connections, for this long
    /// is closed. A live volley peer sends a heartbeat every
    /// `failure_detector.heartbeat_interval` on its control lane, which
    /// keeps its quiet lanes open too. Default 60 s.
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// Most bytes queued on an association's control lane (system messages,
    /// their acks, spawn answers, heartbeats) waiting to be written. Past
    /// it the frame is not queued and the peer's incarnation is
    /// quarantined: a peer that reads none of what its own requests cause
    /// is broken or hostile. Default 8 MiB.
    pub max_control_queue_bytes: usize,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            max_imported_refs: 16_384,
            max_imported_ref_bytes: 4 * 1024 * 1024,
            max_exported_refs: 16_384,
            max_decode_depth: crate::serialization::DEFAULT_MAX_DEPTH,
            max_decode_collection_bytes: crate::serialization::DEFAULT_MAX_COLLECTION_BYTES,
            max_inbound_connections: 1024,
            max_inbound_connections_per_ip: 256,
            idle_timeout: Duration::from_secs(60),
            max_control_queue_bytes: 8 * 1024 * 1024,
        }
    }
}

impl LimitSettings {
    pub(crate) fn validate(&self, heartbeat_interval: Duration) -> Result<(), RemoteSettingsError> {
        let out_of_range = |key, reason| Err(RemoteSettingsError::OutOfRange { key, reason });
        if self.max_imported_refs == 0 {
            return out_of_range("limits.max_imported_refs", "must be at least 1");
        }
        if !(64 * 1024..=1024 * 1024 * 1024).contains(&self.max_imported_ref_bytes) {
            return out_of_range(
                "limits.max_imported_ref_bytes",
                "must be between 64 KiB and 1 GiB",
            );
        }
        if self.max_exported_refs == 0 {
            return out_of_range("limits.max_exported_refs", "must be at least 1");
        }
        if !(8..=10_000).contains(&self.max_decode_depth) {
            return out_of_range(
                "limits.max_decode_depth",
                "must be between 8 and 10000 (deeper risks the stack it protects)",
            );
        }
        if self.max_decode_collection_bytes < 64 * 1024 {
            return out_of_range(
                "limits.max_decode_collection_bytes",
                "must be at least 64 KiB",
            );
        }
        if self.max_inbound_connections == 0 {
            return out_of_range("limits.max_inbound_connections", "must be at least 1");
        }
        if self.max_inbound_connections_per_ip == 0 {
            return out_of_range(
                "limits.max_inbound_connections_per_ip",
                "must be at least 1",
            );
        }
        if self.idle_timeout < heartbeat_interval.saturating_mul(2) {
            return out_of_range(
                "limits.idle_timeout",
                "must be at least twice failure_detector.heartbeat_interval",
            );
        }
        if self.max_control_queue_bytes < 64 * 1024 {
            return out_of_range("limits.max_control_queue_bytes", "must be at least 64 KiB");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::transport::settings::{register_settings, RemoteSettings};

    #[test]
    fn limits_parse_from_toml_and_bad_ones_name_their_key() {
        register_settings();
        let s = volley::Settings::from_toml_str(
            "[remote.limits]\nmax_inbound_connections = 16\nidle_timeout = \"2s\"\n",
        )
        .unwrap();
        let r = RemoteSettings::from_system_settings(&s).unwrap();
        assert_eq!(r.limits.max_inbound_connections, 16);
        assert_eq!(r.limits.idle_timeout, Duration::from_secs(2));
        assert_eq!(r.limits.max_decode_depth, 128, "the others keep defaults");
        let cases = [
            ("max_imported_refs = 0", "limits.max_imported_refs"),
            (
                "max_imported_ref_bytes = 1000",
                "limits.max_imported_ref_bytes",
            ),
            ("max_decode_depth = 100000", "limits.max_decode_depth"),
            ("idle_timeout = \"1500ms\"", "limits.idle_timeout"),
            (
                "max_control_queue_bytes = 10",
                "limits.max_control_queue_bytes",
            ),
            (
                "max_inbound_connections_per_ip = 0",
                "limits.max_inbound_connections_per_ip",
            ),
        ];
        for (line, key) in cases {
            let s = volley::Settings::from_toml_str(&format!("[remote.limits]\n{line}\n")).unwrap();
            let e = RemoteSettings::from_system_settings(&s).unwrap_err();
            assert!(e.to_string().contains(key), "{line}: {e}");
        }
    }
}
