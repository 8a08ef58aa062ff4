//! The sending side: what a sender does to put a message on the wire, and
//! who takes it from there to a socket.
//!
//! A `RemoteRef` hands its message to its `route`, which encodes it into
//! one of its association's `lane`s; a lane's `writer` owns the
//! connection, dials (with `backoff` between failed attempts) and writes
//! whatever the lane has gathered. Nothing here reads from a socket.

pub(crate) mod backoff;
pub(crate) mod lane;
pub(crate) mod route;
pub(crate) mod writer;
