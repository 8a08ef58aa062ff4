//! What the peer of a lane's connection decodes, as its handshake
//! advertised it (wire-protocol.md §5.2a), and what that means for the
//! frames already queued.

use super::{LaneConnection, OutboundLane};
use crate::transport::outbound::OutboundContext;
use crate::wire::{Features, PduKind};

impl<C: LaneConnection> OutboundLane<C> {
    /// Notes what the peer of a new connection decodes: from now on an
    /// ask's reply handle travels inline in a Request only if it decodes
    /// those. Requests queued while an earlier peer at this address did
    /// cannot be written to one that does not (their payload names the
    /// handle by ref id 0, which only a Request defines): they are dropped
    /// and counted as dead letters, and their asks time out.
    pub(crate) fn peer_decodes(&self, core: &(impl OutboundContext + ?Sized), features: Features) {
        self.state.lock().peer_takes_requests = features.requests;
        if !features.requests {
            // Under the flag's lock no Request is queued after this point:
            // whatever the queue holds was encoded before.
            self.discard_queued_kinds(core, &[PduKind::Request]);
        }
    }
}
