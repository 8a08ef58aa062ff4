//! Broadcast routing, and the [`Broadcast`] envelope that broadcasts one
//! message through a router of any logic.

use super::error::SelectError;
use super::logic::{Routees, RoutingLogic, Selection};

/// Sends every message to every routee (needs `M: Clone`).
#[derive(Debug, Default, Clone, Copy)]
pub struct BroadcastRouting;

impl BroadcastRouting {
    /// The logic.
    pub fn new() -> Self {
        BroadcastRouting
    }
}

impl<M: Clone + Send + 'static> RoutingLogic<M> for BroadcastRouting {
    fn select(&self, _msg: &M, routees: &Routees<M>) -> Result<Selection<M>, SelectError> {
        if routees.is_empty() {
            Err(SelectError::NoRoutees)
        } else {
            Ok(Selection::All(M::clone))
        }
    }
}

/// A message for every routee of a router, whatever its logic (Akka's
/// `Broadcast` envelope). Send it as
/// [`RouterMsg::Broadcast`](super::RouterMsg::Broadcast), or use
/// [`RouterRef::broadcast`](super::RouterRef::broadcast).
pub struct Broadcast<M> {
    pub(crate) msg: M,
    pub(crate) copy: fn(&M) -> M,
}

impl<M: Clone> Broadcast<M> {
    /// Wraps `msg`; each routee gets a clone.
    pub fn new(msg: M) -> Self {
        Broadcast {
            msg,
            copy: M::clone,
        }
    }
}

impl<M> Broadcast<M> {
    /// The wrapped message.
    pub fn message(&self) -> &M {
        &self.msg
    }
}

impl<M> std::fmt::Debug for Broadcast<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Broadcast<{}>", std::any::type_name::<M>())
    }
}
