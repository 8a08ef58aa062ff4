//! The [`RoutingLogic`] trait: which routee gets a message.
//!
//! A logic runs on the sender's thread (see `routed_ref`), concurrently for
//! many senders, so it takes `&self` and keeps any state in atomics. It sees
//! an immutable [`Routees`] snapshot; the router replaces the snapshot when
//! its routees change, and a logic that needs a derived structure per routee
//! set (the consistent-hashing ring) builds it once in
//! [`RoutingLogic::prepare`] instead of on every message.

use std::any::{Any, TypeId};
use std::cell::Cell;
use std::sync::Arc;

use super::error::SelectError;
use crate::actor::actor_ref::ActorRef;

/// Where one message goes.
pub enum Selection<M> {
    /// To the routee at this index of [`Routees::refs`].
    One(usize),
    /// To every routee, each getting a copy made with this function (the
    /// first routee gets the original).
    All(fn(&M) -> M),
}

impl<M> std::fmt::Debug for Selection<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selection::One(i) => write!(f, "One({i})"),
            Selection::All(_) => f.write_str("All"),
        }
    }
}

/// Picks the routee(s) for each message.
pub trait RoutingLogic<M: Send + 'static>: Send + Sync + 'static {
    /// Chooses where `msg` goes. Called concurrently from many senders.
    fn select(&self, msg: &M, routees: &Routees<M>) -> Result<Selection<M>, SelectError>;

    /// Builds per-routee-set state (e.g. a hash ring) when the routees change;
    /// [`Routees::prepared`] hands it back in `select`. Default: nothing.
    fn prepare(&self, refs: &[ActorRef<M>]) -> Option<Arc<dyn Any + Send + Sync>> {
        let _ = refs;
        None
    }
}

/// A router's logic, and whether it is the built-in round-robin, which the
/// sender's path runs inline instead of through the trait object.
pub(crate) struct Logic<M: Send + 'static> {
    pub(crate) logic: Arc<dyn RoutingLogic<M>>,
    pub(crate) round_robin: bool,
}

impl<M: Send + 'static> Logic<M> {
    pub(crate) fn of<L: RoutingLogic<M>>(logic: L) -> Self {
        Logic {
            round_robin: TypeId::of::<L>() == TypeId::of::<super::RoundRobin>(),
            logic: Arc::new(logic),
        }
    }
}

/// An immutable list of a router's routees: what the router actor publishes
/// when they change, shared by every sender.
pub(crate) struct Snapshot<M: Send + 'static> {
    /// Shared with every thread's [`Routees`], which keep their own
    /// pointer to it: a routed message reads the routees from its thread's
    /// view, not through the snapshot.
    refs: Arc<[ActorRef<M>]>,
    prepared: Option<Arc<dyn Any + Send + Sync>>,
    /// False until the router actor has created its first routees: until
    /// then senders go through the router actor.
    pub(crate) ready: bool,
}

impl<M: Send + 'static> Snapshot<M> {
    pub(crate) fn new(refs: Vec<ActorRef<M>>, logic: &dyn RoutingLogic<M>, ready: bool) -> Self {
        let prepared = logic.prepare(&refs);
        Snapshot {
            refs: refs.into(),
            prepared,
            ready,
        }
    }

    pub(crate) fn refs(&self) -> &[ActorRef<M>] {
        &self.refs
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }
}

/// The routees as one sender sees them: the router's current list, and
/// this sender's place in its rotation over it ([`Routees::next_index`]).
///
/// Each sending thread has its own `Routees` per router, so a logic that
/// keeps its rotation here writes nothing that other senders read.
pub struct Routees<M: Send + 'static> {
    snapshot: Arc<Snapshot<M>>,
    /// `snapshot.refs`, one pointer less away.
    refs: Arc<[ActorRef<M>]>,
    turn: Cell<usize>,
}

impl<M: Send + 'static> Routees<M> {
    /// A view of `snapshot` whose rotation starts at `turn` (wrapped).
    pub(crate) fn new(snapshot: Arc<Snapshot<M>>, turn: usize) -> Self {
        let n = snapshot.refs.len();
        Routees {
            turn: Cell::new(if n == 0 { 0 } else { turn % n }),
            refs: snapshot.refs.clone(),
            snapshot,
        }
    }

    /// Points this view at a newer list, keeping its place in the rotation
    /// (wrapped if the list shrank); hands back the old list, for the
    /// caller to drop where it chooses.
    pub(crate) fn replace(&mut self, snapshot: Arc<Snapshot<M>>) -> Arc<Snapshot<M>> {
        let n = snapshot.refs.len();
        let turn = self.turn.get();
        self.turn
            .set(if turn < n || n == 0 { turn } else { turn % n });
        self.refs = snapshot.refs.clone();
        std::mem::replace(&mut self.snapshot, snapshot)
    }

    /// The routees, in the order they were added.
    #[inline]
    pub fn refs(&self) -> &[ActorRef<M>] {
        &self.refs
    }

    /// How many routees there are.
    #[inline]
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// What [`RoutingLogic::prepare`] built for this list, if it is a `T`.
    pub fn prepared<T: Any>(&self) -> Option<&T> {
        self.snapshot
            .prepared
            .as_deref()
            .and_then(|p| p.downcast_ref::<T>())
    }

    /// The routee at [`Routees::next_index`], or `None` when there are
    /// none: one bounds check instead of a wrap and a bounds check.
    #[inline(always)]
    pub(crate) fn next_routee(&self) -> Option<&ActorRef<M>> {
        let refs = self.refs();
        let i = self.turn.get();
        let (i, routee) = match refs.get(i) {
            Some(routee) => (i, routee),
            None => (0, refs.first()?),
        };
        self.turn.set(i + 1);
        Some(routee)
    }

    /// The next index of this sender's rotation over the routees: 0, 1, …,
    /// `len() - 1`, 0, … (0 when there are none). The rotation belongs to
    /// the calling thread and this router: it survives changes of the
    /// routees (wrapped if they shrank below it), and a new
    /// sending thread starts one place after the last one that started, so
    /// that concurrent senders do not all begin at the same routee (a
    /// thread given the id of one that exited continues its rotation). What
    /// the router actor routes itself follows one shared rotation.
    #[inline]
    pub fn next_index(&self) -> usize {
        let i = self.turn.get();
        let i = if i < self.len() { i } else { 0 };
        self.turn.set(i + 1);
        i
    }
}
