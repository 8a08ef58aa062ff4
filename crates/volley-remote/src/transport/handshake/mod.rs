//! Who a connection is with, and what it may do: the handshake and what
//! decides it.
//!
//! `setup` speaks the preamble and handshake both ways; `auth` adds the
//! challenge-response over the shared secret and `tls` the encryption
//! under it. `admission` checks an inbound handshake, `trust` says what a
//! peer may make this node do, `probe` checks an address a peer claims
//! before it is dialed back (and `recheck` again while it heartbeats, if
//! it did not answer), and `proof` lets go of associations started on a
//! peer's word that never proved it.

pub(crate) mod admission;
pub(crate) mod auth;
pub(crate) mod probe;
pub(crate) mod proof;
mod recheck;
pub(crate) mod setup;
pub(crate) mod tls;
pub(crate) mod trust;
