//! Messages gathered for one actor in the form its mailbox keeps them, so
//! that the mailbox can take them whole.
//!
//! The remote reader decodes runs of messages for one actor
//! (`volley-remote`'s `inbound/delivery.rs`). Staged as plain messages,
//! each one was moved again into an [`Envelope`] as the run was pushed
//! into the mailbox's queue. Staged here, a message is written once, as
//! the envelope the mailbox holds; the default mailbox then takes the
//! whole batch under one lock: when it is empty (its actor keeps up) it
//! trades its empty queue for the batch's buffer, and no message moves
//! again; otherwise it appends the batch in one copy.

use crate::actor::mailbox::Envelope;

/// Messages for one actor, in order, staged for
/// [`ActorRef::tell_batch`](crate::ActorRef::tell_batch). Reusable: a
/// batch handed over is left empty, with room for the next one.
pub struct MessageBatch<M> {
    /// A vector rather than the mailbox's deque: a push is cheaper, and a
    /// vector becomes a deque and an empty deque a vector without moving
    /// anything (`Mailbox::push_batch`).
    pub(crate) staged: Vec<Envelope<M>>,
}

impl<M> MessageBatch<M> {
    /// An empty batch with room for `capacity` messages.
    pub fn with_capacity(capacity: usize) -> Self {
        MessageBatch {
            staged: Vec::with_capacity(capacity),
        }
    }

    /// Adds `msg` behind the messages already in the batch.
    #[inline]
    pub fn push(&mut self, msg: M) {
        self.staged.push(Envelope::Msg(msg));
    }

    /// How many messages the batch holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    /// True if the batch holds no message.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }
}

impl<M> Default for MessageBatch<M> {
    fn default() -> Self {
        MessageBatch { staged: Vec::new() }
    }
}

impl<M> std::fmt::Debug for MessageBatch<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageBatch")
            .field("len", &self.len())
            .finish()
    }
}
