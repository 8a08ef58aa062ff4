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

use tokio::task::JoinHandle;
use volley::{ActorPath, ActorSystem, DeadLetterReason};

use crate::transport::errors::ResolveError;
use crate::transport::settings::RemoteSettings;
use crate::wire::Address;

/// Why a ref declared by a peer that this node does not dial back is
/// not sent to.
pub(crate) const NOT_CONNECTED_BACK: &str =
    "this node does not dial back a peer it cannot verify (the address check, trust.connect_back)";
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
    /// Whether remoting is shut down (or shutting down).
    fn is_shut_down(&self) -> bool;
    /// Counts a message from or to `peer` as a dead letter.
    fn count_dead_letter(&self, peer: &Address, reason: DeadLetterReason);
    /// A message read from `peer` that cannot be delivered: counted, and
    /// logged within the rate limit.
    fn undeliverable(&self, peer: &Address, why: &str);
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
