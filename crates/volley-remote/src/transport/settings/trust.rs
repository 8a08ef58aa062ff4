//! `[remote.trust]`: what peers may make this node do (`handshake/trust.rs`
//! applies it).

use serde::{Deserialize, Serialize};

use crate::transport::settings::RemoteSettingsError;
use crate::wire::Address;

/// Whom a node that dialed this one gets dialed back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ConnectBack {
    /// Every node whose handshake was accepted, at the address it claims
    /// (Artery's behaviour; the default, so that two nodes need no
    /// configuration to talk both ways).
    #[default]
    Any,
    /// Only nodes listed in `known_peers`, or that proved the shared secret
    /// (`secret`). Others may still send here; their messages are
    /// delivered, but nothing goes back to them.
    Verified,
}

/// `[remote.trust]`: what peers may make this node do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrustSettings {
    /// Pekko's `untrusted-mode`. Default false.
    pub untrusted_mode: bool,
    /// In untrusted mode, the only local actors peers may send to, as
    /// paths from the root (`"/user/api"`), matched exactly. Default empty.
    pub trusted_paths: Vec<String>,
    /// Nodes this node may always dial, as addresses
    /// (`"volley://name@host:port"`). Default empty.
    pub known_peers: Vec<String>,
    /// Dial back nodes that dialed this one. Default `"any"`.
    pub connect_back: ConnectBack,
    /// Let a peer's declaration of a ref on a node this node has no
    /// association with make it dial that node. Default false.
    pub dial_declared_nodes: bool,
    /// Accept a reply to a remote ask from a node other than the one the
    /// ask went to (the asked node forwarded the request). The reply must
    /// still name the ask's unguessable correlation id. Default false.
    pub replies_from_any_node: bool,
}

impl Default for TrustSettings {
    fn default() -> Self {
        TrustSettings {
            untrusted_mode: false,
            trusted_paths: Vec::new(),
            known_peers: Vec::new(),
            connect_back: ConnectBack::Any,
            dial_declared_nodes: false,
            replies_from_any_node: false,
        }
    }
}

impl TrustSettings {
    pub(crate) fn validate(&self) -> Result<(), RemoteSettingsError> {
        if self
            .known_peers
            .iter()
            .any(|a| a.parse::<Address>().is_err())
        {
            return Err(RemoteSettingsError::OutOfRange {
                key: "trust.known_peers",
                reason: "every entry must be an address such as \"volley://name@host:port\"",
            });
        }
        if self
            .trusted_paths
            .iter()
            .any(|p| !p.starts_with('/') || p.contains("://"))
        {
            return Err(RemoteSettingsError::OutOfRange {
                key: "trust.trusted_paths",
                reason: "every entry must be a path from the root, such as \"/user/api\"",
            });
        }
        Ok(())
    }
}
