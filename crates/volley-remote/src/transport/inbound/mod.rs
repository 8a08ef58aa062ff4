//! The receiving side: accepting connections, reading frames, and handing
//! what they carry to mailboxes.
//!
//! `accept` takes a connection through the accepting half of the
//! handshake; a `reader` then reads it, sorting each buffer's frames in
//! one pass (`frames`): user messages go to mailboxes in runs
//! (`delivery`), every other frame to `control_frames`; `peer` is the
//! reader's view of the node on the other end.
//! `guard` caps what an inbound connection may cost, `ends` closes the
//! connections of an incarnation that is gone, and `protocol_error` tells
//! a peer that broke the protocol why it is closed.

pub(crate) mod accept;
mod control_frames;
pub(crate) mod delivery;
pub(crate) mod ends;
mod frames;
pub(crate) mod guard;
mod peer;
pub(crate) mod protocol_error;
pub(crate) mod reader;
