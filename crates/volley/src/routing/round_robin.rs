//! Round-robin: each sender sends to the routees in turn.

use super::error::SelectError;
use super::logic::{Routees, RoutingLogic, Selection};

/// Sends each message to the next routee in turn ([`Routees::next_index`]).
///
/// The rotation is per sending thread (and router), not shared: so that
/// senders on different cores write no common counter, each thread's
/// messages visit every routee evenly, and concurrent senders' messages
/// interleave in no fixed global order
/// (docs/reference/routers.md#round-robin-is-per-sender-thread). The
/// router runs this logic inline rather than through the trait object.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoundRobin;

impl RoundRobin {
    /// The logic.
    pub fn new() -> Self {
        RoundRobin
    }
}

impl<M: Send + 'static> RoutingLogic<M> for RoundRobin {
    #[inline]
    fn select(&self, _msg: &M, routees: &Routees<M>) -> Result<Selection<M>, SelectError> {
        if routees.is_empty() {
            Err(SelectError::NoRoutees)
        } else {
            Ok(Selection::One(routees.next_index()))
        }
    }
}
