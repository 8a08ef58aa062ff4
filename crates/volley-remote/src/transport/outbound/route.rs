//! A remote actor's route: the transport's object behind a `RemoteRef`.
//!
//! volley asks the route to carry every message for its actor
//! (`volley::remote::RemoteRoute`); the route keeps, privately and typed,
//! what makes the next send cheap: its association, the id the peer
//! knows the actor by on the current connection, and where the message
//! type's registration sits. Each cache is only a hint: a stale value is
//! detected and re-learned, never trusted.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use volley::remote::{self, MessageType, RemoteRef, RemoteRoute, RemoteSendError, RemoteSystemMsg};
use volley::{AnyRef, TraceParent};

use crate::transport::outbound::association::system_buffers::SystemKind;
use crate::transport::outbound::association::Association;
use crate::transport::outbound::association::Origin;
use crate::transport::outbound::lane::{Framing, LaneRefusal, Plain, WithContext};
use crate::transport::outbound::OutboundContext;
use crate::wire::Lane;

/// The route to one remote actor (or, shared, to the reply handles a peer
/// declared on one connection).
pub(crate) struct RouteHint<C: OutboundContext> {
    core: Arc<C>,
    /// The association, once learned. Set once: while any route holds an
    /// association, the table finds that same one for its address
    /// (`Associations`), so it never needs replacing.
    association: OnceLock<Arc<Association>>,
    /// The recipient's id on the current connection of one lane.
    recipient: RecipientCache,
    /// Where the registration of the message type last sent sits
    /// (`Registry::outbound_for`).
    pub(crate) outbound_type: AtomicU64,
    /// The incarnation of the node this ref's actor lives in, once known
    /// (0 until then): a ref with a uid names one actor of one incarnation,
    /// and is terminated when that incarnation is gone.
    incarnation: AtomicU64,
    /// Who vouches for the node's address, should this route start its
    /// association (`idle/proof.rs`).
    origin: Origin,
}

impl<C: OutboundContext> RouteHint<C> {
    /// A route whose association is looked up on first use, or known
    /// already (a ref declared by the node it lives on).
    pub(crate) fn new(core: Arc<C>, association: Option<Arc<Association>>) -> Arc<Self> {
        Arc::new(RouteHint {
            core,
            association: association.map_or_else(OnceLock::new, OnceLock::from),
            recipient: RecipientCache::default(),
            outbound_type: AtomicU64::new(0),
            incarnation: AtomicU64::new(0),
            origin: Origin::Vouched,
        })
    }

    /// A route to a node only a peer's declaration named: its association,
    /// started on the first send, is let go of if the node never answers.
    pub(crate) fn on_peers_word(core: Arc<C>) -> Arc<Self> {
        Arc::new(RouteHint {
            core,
            association: OnceLock::new(),
            recipient: RecipientCache::default(),
            outbound_type: AtomicU64::new(0),
            incarnation: AtomicU64::new(0),
            origin: Origin::PeersWord,
        })
    }

    /// Records the incarnation of the node this ref's actor lives in.
    pub(crate) fn bind_incarnation(&self, uid: u64) {
        self.incarnation.store(uid, Ordering::Relaxed);
    }

    /// The incarnation of the node this ref's actor lives in; 0 until
    /// known.
    pub(crate) fn incarnation(&self) -> u64 {
        self.incarnation.load(Ordering::Relaxed)
    }

    /// True if this ref names an actor (it has a uid) of an incarnation of
    /// its node that is gone. The incarnation is learnt the first time
    /// the question is asked while the node's uid is known.
    fn bound_incarnation_gone(&self, association: &Association, target: &RemoteRef) -> bool {
        if target.uid() == 0 || association.deaths.load(Ordering::Relaxed) == 0 {
            // "Whatever lives at the path" is alive whenever its node is;
            // and while no incarnation of the node ever ended, none is
            // gone (the common case costs no lock).
            return false;
        }
        let control = crate::transport::support::lock(&association.control);
        let mut bound = self.incarnation.load(Ordering::Relaxed);
        if bound == 0 {
            bound = control.uid.unwrap_or(0);
            self.incarnation.store(bound, Ordering::Relaxed);
        }
        bound != 0 && control.dead.contains(&bound)
    }

    /// The association a ref's messages go through: cached here, so the
    /// common case is one load; the lookup by address is kept out of line
    /// so that this inlines into every send.
    #[inline]
    fn association(&self, target: &RemoteRef) -> Result<&Association, Box<RemoteSendError>> {
        match self.association.get() {
            Some(a) => Ok(a),
            None => self.learn_association(target),
        }
    }

    #[cold]
    #[inline(never)]
    fn learn_association(&self, target: &RemoteRef) -> Result<&Association, Box<RemoteSendError>> {
        let address = crate::transport::node::address_of(target.path())
            .map_err(|e| RemoteSendError::Unavailable(e.to_string()))?;
        let association = self.core.associate(&address, self.origin)?;
        // A racing learner set the same association: the table has one per
        // address while either is held.
        Ok(self.association.get_or_init(|| association))
    }
}

impl<C: OutboundContext> RouteHint<C> {
    /// The ordinary lane did not take a message (or, with no `refusal`, was
    /// not tried yet): it goes on the large lane if it is too big, the
    /// association is started if it was stopped for idleness (`idle/`), or
    /// the refusal becomes the send's error. Out of line, so the common
    /// send stays small.
    #[cold]
    #[inline(never)]
    fn refused(
        &self,
        association: &Association,
        target: &RemoteRef,
        outbound: &crate::transport::registry::OutboundType,
        msg: &(dyn Any + Send),
        framing: impl Framing,
        refusal: Option<LaneRefusal>,
    ) -> Result<(), Box<RemoteSendError>> {
        let core = &*self.core;
        // One send per turn, in one place: the lane's send is inlined
        // (`OutboundLane::send_user`), so this function holds one copy.
        let (mut lane, mut revived) = (Lane::Ordinary, false);
        let mut refusal = refusal;
        loop {
            if let Some(refused) = refusal {
                lane = next_lane(core, association, lane, &mut revived, refused)?;
            }
            let on = association.lane(lane);
            refusal = on
                .send_user(core, target, &self.recipient, outbound, msg, framing)
                .err();
            if refusal.is_none() {
                return Ok(());
            }
        }
    }

    /// The first send of a route whose association is not known yet:
    /// learns it, then sends as [`RouteHint::refused`] does. Out of line,
    /// so that the common send reads the association with one load and no
    /// merge of two outcomes.
    #[cold]
    #[inline(never)]
    fn send_learning(
        &self,
        target: &RemoteRef,
        outbound: &crate::transport::registry::OutboundType,
        msg: &(dyn Any + Send),
        framing: impl Framing,
    ) -> Result<(), Box<RemoteSendError>> {
        let association = self.learn_association(target)?;
        self.refused(association, target, outbound, msg, framing, None)
    }
}

impl<C: OutboundContext> RouteHint<C> {
    /// A user message for `target`, framed plain or with the sender's
    /// trace context.
    #[inline(always)]
    fn send_user(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
        framing: impl Framing,
    ) -> Result<(), Box<RemoteSendError>> {
        let core = &*self.core;
        let Some(outbound) = core.registry().outbound_for(ty.id, &self.outbound_type) else {
            return Err(unregistered(ty));
        };
        if core.is_shut_down() {
            return Err(shut_down());
        }
        // A node that is gone is refused by the lanes themselves (their
        // limit drops to 0): no check here, on the hot path.
        let Some(association) = self.association.get() else {
            return self.send_learning(target, outbound, msg, framing);
        };
        match association.lane(Lane::Ordinary).send_user(
            core,
            target,
            &self.recipient,
            outbound,
            msg,
            framing,
        ) {
            Ok(()) => Ok(()),
            Err(refusal) => {
                self.refused(association, target, outbound, msg, framing, Some(refusal))
            }
        }
    }
}

impl<C: OutboundContext> RemoteRoute for RouteHint<C> {
    fn send(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
    ) -> Result<(), Box<RemoteSendError>> {
        self.send_user(target, msg, ty, Plain)
    }

    fn send_traced(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
        context: &TraceParent,
    ) -> Result<(), Box<RemoteSendError>> {
        self.send_user(target, msg, ty, WithContext(context))
    }

    fn send_system(&self, target: &RemoteRef, msg: RemoteSystemMsg) {
        let core = &self.core;
        let association = self.association(target).ok();
        if association.is_some_and(|a| self.bound_incarnation_gone(a, target)) {
            return to_gone_incarnation(target, msg);
        }
        let node = association.map(|a| a.remote.clone());
        let (kind, sender) = match msg {
            RemoteSystemMsg::Watch { watcher } => {
                let (Some(node), Some(me)) = (&node, target.any()) else {
                    return watched_is_gone(target, &watcher);
                };
                if !core.add_outgoing_watch(node, &me, &watcher) {
                    return;
                }
                (SystemKind::Watch, Some(watcher))
            }
            RemoteSystemMsg::Unwatch { watcher } => {
                let (Some(node), Some(me)) = (&node, target.any()) else {
                    return;
                };
                if !core.remove_outgoing_watch(node, &me, &watcher) {
                    return;
                }
                (SystemKind::Unwatch, Some(watcher))
            }
            RemoteSystemMsg::Terminate => (SystemKind::Terminate, None),
            RemoteSystemMsg::GracefulStop => (SystemKind::GracefulStop, None),
            RemoteSystemMsg::DeathNotice { .. } => {
                // Death notices leave through a watcher proxy's route
                // (`control/remote_watch.rs`); a plain remote ref is never
                // registered as a watcher.
                tracing::debug!(target = %target.path(), "death notice to a remote ref that is not a watcher proxy dropped");
                return;
            }
        };
        let (Some(association), Some(me)) = (association, target.any()) else {
            return;
        };
        let refused = core.send_reliably(association, kind, me.clone(), sender.clone(), Vec::new());
        if refused.is_err() {
            // The node is gone. A watch is answered here, unless the node's
            // address termination took the entry (and answered) first.
            if let (SystemKind::Watch, Some(watcher)) = (kind, sender) {
                if core.remove_outgoing_watch(&association.remote, &me, &watcher) {
                    watched_is_gone(target, &watcher);
                }
            } else {
                tracing::debug!(target = %target.path(), ?kind, "system message to a node that is gone dropped");
            }
        }
    }

    fn is_terminated(&self, target: &RemoteRef) -> bool {
        if self.core.is_known_dead(target.path(), target.uid()) {
            return true;
        }
        let found;
        let association = match self.association.get() {
            Some(a) => Some(&**a),
            None => {
                found = crate::transport::node::address_of(target.path())
                    .ok()
                    .and_then(|a| self.core.associations().find(&a));
                found.as_deref()
            }
        };
        association.is_some_and(|a| a.is_down() || self.bound_incarnation_gone(a, target))
    }

    fn room(&self, target: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        // The send that was refused went to whichever lane is full: wait on
        // that one (the large lane's flag says if it was the large one), so
        // the caller parks instead of retrying at once.
        let lanes = self
            .association(target)
            .ok()
            .map(|a| (a.lane(Lane::Ordinary).clone(), a.lane(Lane::Large).clone()));
        Box::pin(async move {
            if let Some((ordinary, large)) = lanes {
                if large.is_full() {
                    large.room().await;
                } else {
                    ordinary.room().await;
                }
            }
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Where a refused user message goes next: the large lane if it was too
/// big for the ordinary one, the ordinary lane again once a stopped
/// association is started; anything else is the send's error.
fn next_lane(
    core: &(impl OutboundContext + ?Sized),
    association: &Association,
    lane: Lane,
    revived: &mut bool,
    refusal: LaneRefusal,
) -> Result<Lane, Box<RemoteSendError>> {
    match refusal {
        LaneRefusal::TooBig(_) if lane == Lane::Ordinary => Ok(Lane::Large),
        LaneRefusal::Retired if !*revived => {
            core.revive(association);
            *revived = true;
            Ok(Lane::Ordinary)
        }
        LaneRefusal::Retired => Err(Box::new(RemoteSendError::Unavailable(format!(
            "the association with {} was stopped again while starting",
            association.remote
        )))),
        LaneRefusal::TooBig(size) => Err(Box::new(RemoteSendError::TooLarge {
            size,
            limit: core.settings().max_frame_size as usize,
        })),
        LaneRefusal::Failed(e) => Err(e),
    }
}

#[cold]
#[inline(never)]
fn unregistered(ty: &MessageType) -> Box<RemoteSendError> {
    Box::new(RemoteSendError::Unregistered(ty.name))
}

#[cold]
#[inline(never)]
fn shut_down() -> Box<RemoteSendError> {
    Box::new(RemoteSendError::Unavailable("remoting is shut down".into()))
}

/// A system message for an actor whose incarnation is gone: a watch ends
/// at once, the rest has nobody to reach. Nothing is sent, so the lanes do
/// not declare the ref again (`outbound/lane/gone_refs.rs`).
#[cold]
fn to_gone_incarnation(target: &RemoteRef, msg: RemoteSystemMsg) {
    match msg {
        RemoteSystemMsg::Watch { watcher } => watched_is_gone(target, &watcher),
        other => {
            tracing::debug!(target = %target.path(), msg = ?other, "system message to an actor of a gone incarnation dropped");
        }
    }
}

/// Answers `watcher`'s watch of `target` with its death notice at once:
/// the actor is known gone, or its node cannot be reached.
fn watched_is_gone(target: &RemoteRef, watcher: &AnyRef) {
    remote::deliver_system(
        watcher,
        RemoteSystemMsg::DeathNotice {
            uid: remote::watch_key(target.uid(), target.path()),
        },
    );
}

/// The id a peer knows a recipient by on one lane's current connection.
///
/// One atomic word, so a send reads it with one relaxed load and no lock:
/// the connection's generation in the high 32 bits, the id in the next 24,
/// the lane in the low 8. A word from another lane or an older connection
/// (the export table was cleared) does not match and is not used.
#[derive(Default)]
pub(crate) struct RecipientCache(AtomicU64);

/// A lane and the generation of its export table's numbering, as the bits
/// of a [`RecipientCache`] word that name them. The lane keeps it whole, so
/// a send compares it as it is instead of building it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheTag(u64);

impl CacheTag {
    /// `lane`'s first numbering (generation 1: a lane's generation is
    /// never 0, so the empty word matches no tag).
    pub(crate) fn first(lane: Lane) -> Self {
        CacheTag((1 << 32) | lane as u64)
    }

    /// The same lane's next numbering: ids cached under this one are not
    /// trusted any more.
    #[must_use]
    pub(crate) fn next(self) -> Self {
        let generation = ((self.0 >> 32) as u32).wrapping_add(1).max(1);
        CacheTag((u64::from(generation) << 32) | (self.0 & 0xff))
    }

    /// The generation, for tests.
    #[cfg(test)]
    pub(crate) fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

impl RecipientCache {
    /// Ids at or above this do not fit the word and are never cached.
    const ID_LIMIT: u32 = 1 << 24;

    /// The bits of a word that say which lane and connection it is for.
    const TAG_BITS: u64 = 0xffff_ffff_0000_00ff;

    /// The cached id for the lane and numbering `tag` names: one mask and
    /// one comparison.
    #[inline]
    pub(crate) fn get(&self, tag: CacheTag) -> Option<u32> {
        let word = self.0.load(Ordering::Relaxed);
        let matches = word & Self::TAG_BITS == tag.0;
        matches.then_some(((word >> 8) & 0xff_ffff) as u32)
    }

    /// Remembers `id` under `tag`, if it fits.
    pub(crate) fn set(&self, tag: CacheTag, id: u32) {
        if id != 0 && id < Self::ID_LIMIT {
            self.0
                .store(tag.0 | (u64::from(id) << 8), Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_recipient_id_is_used_only_on_its_lane_and_connection() {
        let cache = RecipientCache::default();
        let ordinary = CacheTag::first(Lane::Ordinary);
        assert_eq!(cache.get(ordinary), None);
        cache.set(ordinary, 4097);
        assert_eq!(cache.get(ordinary), Some(4097));
        assert_eq!(
            cache.get(CacheTag::first(Lane::Large)),
            None,
            "another lane"
        );
        assert_eq!(cache.get(ordinary.next()), None, "a newer connection");
        cache.set(ordinary, RecipientCache::ID_LIMIT);
        assert_eq!(
            cache.get(ordinary),
            Some(4097),
            "an id too wide for the word is not cached"
        );
    }

    #[test]
    fn a_tags_generation_wraps_past_zero_to_one() {
        let tag = CacheTag((u64::from(u32::MAX) << 32) | Lane::Large as u64);
        assert_eq!(tag.next(), CacheTag((1 << 32) | Lane::Large as u64));
        assert_eq!(tag.next().generation(), 1);
    }
}
