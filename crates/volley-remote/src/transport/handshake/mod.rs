//! Who a connection is with: the handshake's protocol, and what peers
//! are trusted with.
//!
//! `setup` speaks the preamble and handshake both ways; `auth` adds the
//! challenge-response over the shared secret and `tls` the encryption
//! under it; `trust` says what a peer may make this node do. Whether an
//! inbound handshake is let in is decided a layer up, in `admission/`,
//! since that needs the associations; this layer sits below them, so that
//! a lane's writer (`outbound/writer.rs`) can dial.

pub(crate) mod auth;
pub(crate) mod setup;
pub(crate) mod tls;
pub(crate) mod trust;

use crate::transport::handshake::auth::Secret;
use crate::transport::handshake::tls::TlsContext;
use crate::transport::handshake::trust::Trust;
use crate::transport::node::NodeContext;

/// What dialing and answering a handshake need of the node.
pub(crate) trait HandshakeContext: NodeContext {
    /// The shared secret every connection proves, if configured.
    fn secret(&self) -> Option<&Secret>;
    /// TLS both ways, if configured.
    fn tls(&self) -> Option<&TlsContext>;
    /// What peers may make this node do.
    fn trust(&self) -> &Trust;
}
