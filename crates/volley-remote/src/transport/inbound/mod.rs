//! The receiving side: accepting connections, reading frames, and handing
//! what they carry to mailboxes.
//!
//! `reader` accepts, runs the accepting half of the handshake and decodes
//! whole reads; `delivery` hands decoded messages to mailboxes in runs.
//! `guard` caps what an inbound connection may cost, `ends` closes the
//! connections of an incarnation that is gone, and `protocol_error` tells
//! a peer that broke the protocol why it is closed.

pub(crate) mod delivery;
pub(crate) mod ends;
pub(crate) mod guard;
pub(crate) mod protocol_error;
pub(crate) mod reader;
