//! What a peer may make this node do: which nodes it may make this node
//! dial, which local actors it may reach, which system messages it may
//! send (`[remote.trust]`).
//!
//! A peer names addresses in three places: the `from` of its handshake,
//! the paths of the refs it declares, and the nodes its spawn requests and
//! asks expect answers from. Each would otherwise let any peer point this
//! node's outbound connections at a port of its choosing. The rules:
//!
//! - a node this node dialed itself, because its own code named the
//!   address, is always associated;
//! - a node that dials this one is dialed back (its heartbeats and acks
//!   need the way back) when `connect_back = "any"` (the default, as in
//!   Artery), or, with `"verified"`, only when it is listed in
//!   `known_peers` or proved the shared secret;
//! - a ref a peer declares on a third node is reachable only when that
//!   node is associated already, is listed in `known_peers`, or
//!   `dial_declared_nodes` is on; otherwise messages to it are dead
//!   letters and watching it reports it terminated at once.
//!
//! Untrusted mode (Pekko's `untrusted-mode`) closes more: only
//! `trusted_paths` receive from peers, remote spawn is refused whatever
//! `remote_spawn` says, no system message but watch and unwatch (and the
//! answers to this node's own watches and spawns) is accepted, and refs
//! on third nodes are never reachable through a peer's declaration.

use serde::{Deserialize, Serialize};
use volley::remote::LogLimiter;
use volley::DeadLetterReason;

use crate::transport::core::RemotingCore;
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

/// The trust settings, parsed once for the checks on the read path.
pub(crate) struct Trust {
    pub(crate) untrusted_mode: bool,
    trusted_paths: Vec<String>,
    known_peers: Vec<Address>,
    connect_back: ConnectBack,
    dial_declared_nodes: bool,
    pub(crate) replies_from_any_node: bool,
    /// Peers proved the shared secret in their handshake.
    authenticated_peers: bool,
    log: LogLimiter,
}

/// At most this many log lines a second about what a peer was refused.
const REFUSED_LOG_PER_SECOND: u32 = 10;

impl Trust {
    pub(crate) fn new(settings: &TrustSettings, authenticated_peers: bool) -> Self {
        Trust {
            untrusted_mode: settings.untrusted_mode,
            trusted_paths: settings.trusted_paths.clone(),
            known_peers: settings
                .known_peers
                .iter()
                .filter_map(|a| a.parse().ok())
                .collect(),
            connect_back: settings.connect_back,
            dial_declared_nodes: settings.dial_declared_nodes,
            replies_from_any_node: settings.replies_from_any_node,
            authenticated_peers,
            log: LogLimiter::new(REFUSED_LOG_PER_SECOND),
        }
    }

    /// Whether a node whose handshake was accepted is dialed back.
    pub(crate) fn connects_back_to(&self, peer: &Address) -> bool {
        match self.connect_back {
            ConnectBack::Any => !self.untrusted_mode || self.is_verified(peer),
            ConnectBack::Verified => self.is_verified(peer),
        }
    }

    /// Listed in `known_peers`, or every peer proved the shared secret.
    pub(crate) fn is_verified(&self, peer: &Address) -> bool {
        self.authenticated_peers || self.is_known_peer(peer)
    }

    /// Listed in `known_peers`.
    pub(crate) fn is_known_peer(&self, peer: &Address) -> bool {
        self.known_peers.contains(peer)
    }

    /// Whether a peer's declaration of a ref on `node` (not the peer, not
    /// this node) may make this node dial `node`; `associated`: this node
    /// has an association with it already.
    pub(crate) fn may_dial_declared(&self, node: &Address, associated: bool) -> bool {
        !self.untrusted_mode
            && (associated || self.dial_declared_nodes || self.known_peers.contains(node))
    }

    /// Whether peers may reach the local actor at `path` (its elements,
    /// from the root).
    pub(crate) fn may_receive(&self, elements: &str) -> bool {
        !self.untrusted_mode || self.trusted_paths.iter().any(|p| p == elements)
    }

    /// Counts and (within the rate limit) logs something refused to `peer`.
    pub(crate) fn refused(&self, core: &RemotingCore, peer: &Address, what: &str) {
        self.log_refused(peer, what);
        core.count_dead_letter(peer, DeadLetterReason::Undeliverable);
    }

    /// Logs, within the rate limit, something refused to `peer`.
    pub(crate) fn log_refused(&self, peer: &Address, what: &str) {
        if self.log.allow() {
            tracing::warn!(%peer, "refused: {what}");
        }
    }
}
