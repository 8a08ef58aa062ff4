//! Refs to actors of an incarnation that is gone, let go of by every
//! lane's export table.
//!
//! A ref with a uid names one actor of one incarnation of its node. Once
//! that incarnation has ended (the node restarted, was quarantined, or
//! left), none of its actors can ever receive again, so the refs to them
//! that lanes declared are dropped: else every restart of a peer would
//! leave its watched actors in the tables for as long as the association
//! lives, and every new connection would declare them again. Uid-less
//! refs ("whatever lives at the path") stay: the next incarnation may have
//! an actor there.
//!
//! Dropping a ref frees its id (`lasting_ids.rs` says when it may be used
//! again). Routes cache the ids of their actors per lane and connection
//! generation: a lane that drops any ref starts a new generation, so no
//! cached id is trusted for a ref it no longer holds. A user message sent
//! to a dropped ref anyway declares it again, as a new ref, and the node's
//! new incarnation counts it as a dead letter; the next end of an
//! incarnation of that node drops it again. A system message to it is not
//! sent (`outbound/route.rs`: a watch ends at once).

use volley::AnyRef;

use super::{LaneConnection, OutboundLane};
use crate::transport::node::authority_of;
use crate::transport::outbound::association::Association;
use crate::transport::outbound::route::RouteHint;
use crate::transport::outbound::OutboundContext;
use crate::transport::support::lock;
use crate::wire::{PduKind, FRAME_HEADER_LEN};

/// The actors of one node that belong to no live incarnation of it.
pub(crate) struct GoneIncarnations<'a> {
    system: &'a str,
    authority: String,
    /// The node's live incarnation, if it has one (after a restart); its
    /// actors stay.
    live: Option<u64>,
    /// The incarnation a ref's route is bound to, 0 if none (a route of
    /// this transport is a `RouteHint` of the context's type).
    bound_incarnation: fn(&dyn std::any::Any) -> u64,
}

impl GoneIncarnations<'_> {
    /// Whether `actor` is one of them: a remote ref with a uid, on this
    /// node, bound to another incarnation than the live one or to none
    /// known (such a ref is declared again if it is sent again, and the
    /// node tells whether it is still there).
    fn holds(&self, actor: &AnyRef) -> bool {
        let Some(remote) = actor.as_remote() else {
            return false;
        };
        let path = remote.path();
        if remote.uid() == 0
            || path.system() != self.system
            || path.authority() != Some(self.authority.as_str())
        {
            return false;
        }
        let bound = (self.bound_incarnation)(remote.route().as_any());
        bound == 0 || Some(bound) != self.live
    }
}

/// An incarnation of `association`'s node has ended: every lane of every
/// association lets go of the refs to its actors (a ref to them may have
/// been passed on to a third node). Called with no lock held.
pub(crate) fn forget_refs_of_gone_incarnations<X: OutboundContext>(
    core: &X,
    association: &Association,
) {
    let live = match association.is_down() {
        true => None,
        false => lock(&association.control).uid,
    };
    let gone = GoneIncarnations {
        system: association.remote.system(),
        authority: authority_of(&association.remote).into_owned(),
        live,
        bound_incarnation: |route| {
            route
                .downcast_ref::<RouteHint<X>>()
                .map_or(0, RouteHint::incarnation)
        },
    };
    let mut dropped = 0;
    for other in core.associations().all() {
        for lane in other.lanes() {
            dropped += lane.forget_refs_of(&gone);
        }
    }
    tracing::debug!(remote = %association.remote, ?live, dropped, "refs to actors of gone incarnations dropped");
}

impl<C: LaneConnection> OutboundLane<C> {
    /// Drops the refs to actors of `gone` from the export table; returns
    /// how many.
    pub(crate) fn forget_refs_of(&self, gone: &GoneIncarnations<'_>) -> usize {
        let mut st = self.state.lock();
        let table = st.exports.get_mut();
        let dropped = table.release_gone(|actor| gone.holds(actor));
        if dropped == 0 {
            return 0;
        }
        // No frame queued can name their ids (heartbeats and acks may be
        // queued while the node is away): no new connection needs them
        // declared, and the ids are free at once.
        if !may_name_ref_ids(&st.buf) {
            st.exports.get_mut().note_load();
        }
        st.generation = st.generation.next();
        dropped
    }
}

/// Whether any of the whole frames in `queued` may name a ref id: a
/// message (its recipient, its sender, refs in its payload) or a
/// declaration. An unknown kind is taken to.
fn may_name_ref_ids(queued: &[u8]) -> bool {
    let mut start = 0;
    while let Some(header) = queued.get(start..start + FRAME_HEADER_LEN) {
        let len = u32::from_le_bytes(header[..4].try_into().expect("four bytes")) as usize;
        let names_none = matches!(
            PduKind::from_u8(header[4]),
            Some(
                PduKind::Heartbeat
                    | PduKind::HeartbeatAck
                    | PduKind::Disassociate
                    | PduKind::SystemAck
                    | PduKind::Flush
                    | PduKind::FlushAck
                    | PduKind::SpawnRequest
                    | PduKind::SpawnResponse
                    | PduKind::Cluster
            )
        );
        if !names_none {
            return true;
        }
        start += 4 + len;
    }
    false
}

#[cfg(test)]
mod tests;
