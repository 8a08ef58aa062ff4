//! Smallest-mailbox routing from the cheap, approximate per-actor queue
//! length ([`ActorRef::mailbox_len`](crate::ActorRef::mailbox_len)).
//!
//! Unlike Akka's, it cannot see whether a routee is busy with a message
//! (volley keeps no such flag, and reading one would cost every actor a
//! write per message), only how many are queued. The scan starts at the
//! sender's next round-robin index ([`Routees::next_index`]) so that ties
//! (typically: all mailboxes empty) spread round-robin instead of piling
//! onto the first routee, and stops early at an empty mailbox.

use super::error::SelectError;
use super::logic::{Routees, RoutingLogic, Selection};

/// Sends each message to the routee with the fewest queued messages.
#[derive(Debug, Default, Clone, Copy)]
pub struct SmallestMailbox;

impl SmallestMailbox {
    /// The logic.
    pub fn new() -> Self {
        SmallestMailbox
    }
}

impl<M: Send + 'static> RoutingLogic<M> for SmallestMailbox {
    fn select(&self, _msg: &M, routees: &Routees<M>) -> Result<Selection<M>, SelectError> {
        let refs = routees.refs();
        let n = refs.len();
        if n == 0 {
            return Err(SelectError::NoRoutees);
        }
        let start = routees.next_index();
        let mut best = (usize::MAX, 0);
        for k in 0..n {
            let i = if start + k < n {
                start + k
            } else {
                start + k - n
            };
            let len = refs[i].mailbox_len();
            if len < best.0 {
                best = (len, i);
                if len == 0 {
                    break;
                }
            }
        }
        Ok(Selection::One(best.1))
    }
}
