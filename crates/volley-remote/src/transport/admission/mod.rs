//! Who is let in, and who is dialed back: the checks of an inbound
//! handshake (`checks`), the check of an address a peer claims before it
//! is dialed back (`probe`), and the same check again while an undialed
//! node heartbeats, if its address did not answer in time (`recheck`).

pub(crate) mod checks;
pub(crate) mod probe;
mod recheck;
