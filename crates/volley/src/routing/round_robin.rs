//! Round-robin: routee `n mod len` for the n-th message.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::SelectError;
use super::logic::{Routees, RoutingLogic, Selection};

/// Sends each message to the next routee in turn. One shared atomic counter:
/// the only write a sender makes besides the routee's mailbox.
#[derive(Debug, Default)]
pub struct RoundRobin {
    next: AtomicUsize,
}

impl RoundRobin {
    /// Starts at the first routee.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<M: Send + 'static> RoutingLogic<M> for RoundRobin {
    #[inline]
    fn select(&self, _msg: &M, routees: &Routees<M>) -> Result<Selection<M>, SelectError> {
        match routees.len() {
            0 => Err(SelectError::NoRoutees),
            1 => Ok(Selection::One(0)),
            n => Ok(Selection::One(
                self.next.fetch_add(1, Ordering::Relaxed) % n,
            )),
        }
    }
}
