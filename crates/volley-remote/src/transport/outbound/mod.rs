//! The sending side: the association with each remote node, what a
//! sender does to put a message on the wire, and who takes it from there
//! to a socket.
//!
//! An `association` is this node's state towards one remote node (as in
//! Artery, the outbound side): its lanes, what it knows of the node's
//! incarnations, its system-message buffers and which of its tasks run.
//! A `RemoteRef` hands its message to its `route`, which encodes it into
//! one of its association's `lane`s; a lane's `writer` owns the
//! connection, dials (with `backoff` between failed attempts) and writes
//! whatever the lane has gathered. Nothing here reads from a socket.

pub(crate) mod association;
pub(crate) mod backoff;
pub(crate) mod lane;
pub(crate) mod route;
pub(crate) mod writer;
