//! What the remoting API reports when it cannot do what was asked.

use std::time::Duration;

use crate::transport::settings::RemoteSettingsError;

/// Why remoting could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Bad `[remote]` settings.
    #[error(transparent)]
    Settings(#[from] RemoteSettingsError),
    /// The listener could not bind.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Where.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The canonical address is invalid.
    #[error("invalid canonical address: {0}")]
    Address(#[from] crate::wire::AddressError),
    /// The TLS certificates, key or trust roots cannot be used.
    #[error(transparent)]
    Tls(#[from] crate::transport::settings::TlsError),
    /// The actor system is already terminated.
    #[error("the actor system has terminated")]
    SystemTerminated,
    /// Another transport's `ActorRef` codec is installed in this process.
    #[error(transparent)]
    Codec(#[from] volley::remote::codec::CodecConflict),
}

/// Why a remote spawn failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteSpawnError {
    /// The remote node refused or failed (disabled, unknown kind, bad name…).
    #[error("remote spawn failed: {0}")]
    Refused(String),
    /// No answer in time.
    #[error("remote spawn timed out after {0:?}")]
    Timeout(Duration),
    /// The request could not be sent.
    #[error("remote spawn could not be sent: {0}")]
    Send(String),
}

/// Why a path could not be turned into a remote ref.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The path is malformed.
    #[error(transparent)]
    Path(#[from] volley::PathError),
    /// The path has no `@host:port`.
    #[error("{0} names no node (expected volley://system@host:port/...)")]
    NoAuthority(String),
    /// The node part is not a valid address.
    #[error(transparent)]
    Address(#[from] crate::wire::AddressError),
}
