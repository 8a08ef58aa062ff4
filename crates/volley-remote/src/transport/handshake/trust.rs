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

use volley::remote::LogLimiter;
use volley::DeadLetterReason;

use crate::transport::node::NodeContext;
use crate::transport::settings::{ConnectBack, TrustSettings};
use crate::wire::Address;

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
    pub(crate) fn refused(&self, core: &(impl NodeContext + ?Sized), peer: &Address, what: &str) {
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
