//! volley remoting: wire protocol, codec and TCP transport.
//!
//! [`wire`] is the versioned wire protocol (preamble, frames, PDUs) with an
//! allocation-free [`wire::Encoder`] and [`wire::Decoder`];
//! [`serialization`] maps serializer ids to payload formats. The byte-level
//! specification lives in `docs/wire-protocol.md` at the repository root and
//! is pinned by the golden vectors in `tests/vectors/`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod serialization;
mod sync;
pub mod transport;
pub mod wire;

pub use transport::{
    register_settings, AssociationState, DisassociationReason, Registry, RemoteSettings, Remoting,
    RemotingEvent, REMOTE_METRIC_NAMES,
};

/// Compiles and runs the code blocks of the repository's `README.md` as
/// doctests (`cargo test -p volley-remote --doc`), so the snippets there
/// cannot drift from the API. Exists only while doctests are collected.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
