//! What every stage may know of the node it runs in, and nothing more:
//! its system, settings, address and incarnation, whether it is shutting
//! down, where its dead letters go and who keeps its background tasks.
//!
//! Each stage's own context (`outbound::OutboundContext`,
//! `liveness::LivenessContext`, ...) extends [`NodeContext`] with what
//! that stage needs from the others; `RemotingCore` (`core/`) implements
//! them all, and no stage names it. This is Artery's split between
//! `ArteryTransport` and the `InboundContext`/`OutboundContext` its stages
//! see: a stage can be read, and tested against a fake, without the rest.

use std::fmt;

use tokio::task::JoinHandle;
use volley::{ActorPath, ActorSystem, DeadLetterReason};

use crate::transport::errors::ResolveError;
use crate::transport::registry::DeliverError;
use crate::transport::settings::RemoteSettings;
use crate::wire::Address;

/// Why a ref declared by a peer that this node does not dial back is
/// not sent to.
pub(crate) const NOT_CONNECTED_BACK: &str =
    "this node does not dial back a peer it cannot verify (the address check, trust.connect_back)";
/// Why a message read from a peer cannot be delivered. Formatted only
/// when the log's rate limit lets it through: a peer that floods this
/// node with undeliverable messages costs a count each, not a string.
#[derive(Debug)]
pub(crate) enum Undeliverable {
    /// No message type is registered under the frame's wire type id.
    UnknownType { type_id: u32 },
    /// The type registered under `type_id` could not deliver it.
    NotDelivered {
        type_name: &'static str,
        type_id: u32,
        error: DeliverError,
    },
    /// A large-lane frame over this node's `max_frame_size`.
    TooLarge { len: usize, max: usize },
    /// A system message of a kind this node does not know.
    UnknownSystemKind(u32),
    /// A system message for a ref the peer never declared.
    UndeclaredRecipient { kind: &'static str },
    /// A watch or an unwatch that names no watcher.
    NoWatcher { kind: &'static str },
    /// A system message whose payload does not decode.
    Malformed { kind: &'static str },
}

/// What the registration of `type_name` under `type_id` could not do.
pub(crate) fn not_delivered(
    type_name: &'static str,
    type_id: u32,
    error: DeliverError,
) -> Undeliverable {
    Undeliverable::NotDelivered {
        type_name,
        type_id,
        error,
    }
}

impl fmt::Display for Undeliverable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undeliverable::UnknownType { type_id } => {
                write!(f, "unknown message type id {type_id}")
            }
            Undeliverable::NotDelivered {
                type_name,
                type_id,
                error,
            } => write!(f, "{type_name} ({type_id}): {error}"),
            Undeliverable::TooLarge { len, max } => {
                write!(f, "a frame of {len} bytes is over max_frame_size ({max})")
            }
            Undeliverable::UnknownSystemKind(kind) => {
                write!(f, "unknown system message kind {kind}")
            }
            Undeliverable::UndeclaredRecipient { kind } => {
                write!(f, "{kind} for an undeclared ref")
            }
            Undeliverable::NoWatcher { kind } => write!(f, "{kind} without a watcher"),
            Undeliverable::Malformed { kind } => write!(f, "malformed {kind} system message"),
        }
    }
}

/// The node a stage runs in.
pub(crate) trait NodeContext: Send + Sync + 'static {
    /// The actor system remoting serves.
    fn system(&self) -> &ActorSystem;
    /// The `[remote]` settings.
    fn settings(&self) -> &RemoteSettings;
    /// This node's address.
    fn address(&self) -> &Address;
    /// This node's incarnation.
    fn uid(&self) -> u64;
    /// When this incarnation started, as its handshakes tell it
    /// (`liveness/order.rs`).
    fn stamp(&self) -> u64;
    /// Whether remoting is shut down (or shutting down).
    fn is_shut_down(&self) -> bool;
    /// Counts a message from or to `peer` as a dead letter.
    fn count_dead_letter(&self, peer: &Address, reason: DeadLetterReason);
    /// A message read from `peer` that cannot be delivered: counted, and
    /// logged within the rate limit.
    fn undeliverable(&self, peer: &Address, why: Undeliverable);
    /// Keeps a background task's handle, so that shutdown can stop it.
    fn track(&self, task: JoinHandle<()>);
}

/// `host:port` of an address as it appears in paths (IPv6 in brackets).
pub(crate) fn authority_of(address: &Address) -> std::borrow::Cow<'_, str> {
    if address.host().contains(':') {
        format!("[{}]:{}", address.host(), address.port()).into()
    } else {
        format!("{}:{}", address.host(), address.port()).into()
    }
}

/// `volley://system@host:port` of a remote path.
pub(crate) fn address_of(path: &ActorPath) -> Result<Address, ResolveError> {
    let authority = path
        .authority()
        .ok_or_else(|| ResolveError::NoAuthority(path.to_string()))?;
    Ok(format!("volley://{}@{}", path.system(), authority).parse()?)
}
