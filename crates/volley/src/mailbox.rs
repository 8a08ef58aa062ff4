//! Mailboxes: the user-message queue of one actor.
//!
//! The unbounded mailbox is crossbeam's segmented queue: a push is one atomic
//! index bump and a slot write, and memory comes in blocks of 31 slots, so
//! `tell` allocates only once per block, never per message. The bounded one is
//! crossbeam's array queue, allocated once at spawn. System messages have a
//! queue of their own in the cell (see `cell`), so they overtake user messages.

use crossbeam_queue::{ArrayQueue, SegQueue};

/// What an actor's mailbox holds.
pub(crate) enum Envelope<M> {
    /// An ordinary message.
    Msg(M),
    /// A timer's message, delivered only while the timer generation `id` is
    /// still live, so a cancelled timer's message is never handled even when
    /// it was already queued.
    Timer { msg: M, id: u64 },
    /// A graceful stop: handled in order after everything queued before it.
    Poison,
}

/// How a bounded mailbox makes room when it is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overflow {
    /// `tell` drops the new message to dead letters.
    DropNewest,
    /// `tell` evicts the oldest queued message to dead letters.
    DropOldest,
}

/// Which mailbox an actor gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MailboxConfig {
    /// Unbounded MPSC queue (the default).
    #[default]
    Unbounded,
    /// At most `capacity` queued user messages. `try_tell` hands the message
    /// back in an `Err` when full; `tell` applies `overflow`.
    Bounded {
        /// The most messages the mailbox holds.
        capacity: usize,
        /// What `tell` does when it is full.
        overflow: Overflow,
    },
}

impl MailboxConfig {
    /// A bounded mailbox.
    pub fn bounded(capacity: usize, overflow: Overflow) -> Self {
        MailboxConfig::Bounded { capacity, overflow }
    }
}

pub(crate) enum Mailbox<M> {
    Unbounded(SegQueue<Envelope<M>>),
    Bounded(ArrayQueue<Envelope<M>>, Overflow),
}

impl<M> Mailbox<M> {
    /// Panics on a zero capacity: callers validate the config first.
    pub(crate) fn new(config: MailboxConfig) -> Self {
        match config {
            MailboxConfig::Unbounded => Mailbox::Unbounded(SegQueue::new()),
            MailboxConfig::Bounded { capacity, overflow } => {
                Mailbox::Bounded(ArrayQueue::new(capacity), overflow)
            }
        }
    }

    /// Enqueues, applying the overflow strategy. `Err` holds what was dropped
    /// (the new envelope, or the evicted oldest one) for dead letters.
    #[inline]
    pub(crate) fn push(&self, env: Envelope<M>) -> Result<(), Envelope<M>> {
        match self {
            Mailbox::Unbounded(q) => {
                q.push(env);
                Ok(())
            }
            Mailbox::Bounded(q, overflow) => {
                // A graceful stop is never the one dropped: losing it would
                // leave the actor running forever.
                if matches!(env, Envelope::Poison) || *overflow == Overflow::DropOldest {
                    match q.force_push(env) {
                        None => Ok(()),
                        Some(evicted) => Err(evicted),
                    }
                } else {
                    q.push(env)
                }
            }
        }
    }

    /// Enqueues only if there is room; hands the envelope back otherwise.
    #[inline]
    pub(crate) fn try_push(&self, env: Envelope<M>) -> Result<(), Envelope<M>> {
        match self {
            Mailbox::Unbounded(q) => {
                q.push(env);
                Ok(())
            }
            Mailbox::Bounded(q, _) => q.push(env),
        }
    }

    #[inline]
    pub(crate) fn pop(&self) -> Option<Envelope<M>> {
        match self {
            Mailbox::Unbounded(q) => q.pop(),
            Mailbox::Bounded(q, _) => q.pop(),
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Mailbox::Unbounded(q) => q.is_empty(),
            Mailbox::Bounded(q, _) => q.is_empty(),
        }
    }

    /// Approximate under concurrency; cheap (two index loads).
    pub(crate) fn len(&self) -> usize {
        match self {
            Mailbox::Unbounded(q) => q.len(),
            Mailbox::Bounded(q, _) => q.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(env: Envelope<u32>) -> u32 {
        match env {
            Envelope::Msg(m) => m,
            _ => panic!("not a message"),
        }
    }

    #[test]
    fn drop_newest_keeps_the_oldest() {
        let mb = Mailbox::new(MailboxConfig::bounded(2, Overflow::DropNewest));
        assert!(mb.push(Envelope::Msg(1)).is_ok());
        assert!(mb.push(Envelope::Msg(2)).is_ok());
        assert_eq!(mb.push(Envelope::Msg(3)).map_err(msg), Err(3));
        assert_eq!(msg(mb.pop().unwrap()), 1);
        assert_eq!(msg(mb.pop().unwrap()), 2);
    }

    #[test]
    fn drop_oldest_evicts_the_head() {
        let mb = Mailbox::new(MailboxConfig::bounded(2, Overflow::DropOldest));
        mb.push(Envelope::Msg(1)).ok();
        mb.push(Envelope::Msg(2)).ok();
        assert_eq!(mb.push(Envelope::Msg(3)).map_err(msg), Err(1));
        assert_eq!(msg(mb.pop().unwrap()), 2);
        assert_eq!(msg(mb.pop().unwrap()), 3);
    }

    #[test]
    fn try_push_hands_the_message_back_when_full() {
        let mb = Mailbox::new(MailboxConfig::bounded(1, Overflow::DropOldest));
        assert!(mb.try_push(Envelope::Msg(1)).is_ok());
        assert_eq!(mb.try_push(Envelope::Msg(2)).map_err(msg), Err(2));
        assert_eq!(mb.len(), 1);
    }
}
