//! The [`RoutingLogic`] trait: which routee gets a message.
//!
//! A logic runs on the sender's thread (see `routed_ref`), concurrently for
//! many senders, so it takes `&self` and keeps any state in atomics. It sees
//! an immutable [`Routees`] snapshot; the router replaces the snapshot when
//! its routees change, and a logic that needs a derived structure per routee
//! set (the consistent-hashing ring) builds it once in
//! [`RoutingLogic::prepare`] instead of on every message.

use std::any::Any;
use std::sync::Arc;

use super::error::SelectError;
use crate::actor_ref::ActorRef;

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

/// An immutable snapshot of a router's routees.
pub struct Routees<M: Send + 'static> {
    refs: Vec<ActorRef<M>>,
    prepared: Option<Arc<dyn Any + Send + Sync>>,
    /// False until the router actor has created its first routees: until
    /// then senders go through the router actor.
    pub(crate) ready: bool,
}

impl<M: Send + 'static> Routees<M> {
    pub(crate) fn new(refs: Vec<ActorRef<M>>, logic: &dyn RoutingLogic<M>, ready: bool) -> Self {
        let prepared = logic.prepare(&refs);
        Routees {
            refs,
            prepared,
            ready,
        }
    }

    /// The routees, in the order they were added.
    pub fn refs(&self) -> &[ActorRef<M>] {
        &self.refs
    }

    /// How many routees there are.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// What [`RoutingLogic::prepare`] built for this snapshot, if it is a `T`.
    pub fn prepared<T: Any>(&self) -> Option<&T> {
        self.prepared.as_deref().and_then(|p| p.downcast_ref::<T>())
    }
}
