//! Who is let in, and who is dialed back: the checks of an inbound
//! handshake (`checks`), the check of an address a peer claims before it
//! is dialed back (`probe`), and the same check again while an undialed
//! node heartbeats, if its address did not answer in time (`recheck`).

pub(crate) mod checks;
pub(crate) mod probe;
pub(crate) mod recheck;

use crate::transport::admission::probe::Probes;
use crate::transport::liveness::LivenessContext;

/// What admitting a connection needs of the rest of the transport, on
/// top of liveness (which says which incarnations are gone): the checks of
/// claimed addresses under way and remembered.
pub(crate) trait AdmissionContext: LivenessContext {
    /// The checks of the addresses nodes that dial in claim.
    fn probes(&self) -> &Probes;
}
