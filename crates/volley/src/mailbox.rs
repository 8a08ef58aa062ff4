//! Mailboxes: the user-message queue of one actor.
//!
//! A mailbox is a `VecDeque` behind a spin lock that the consumer empties in
//! one swap per activation. crossbeam's lock-free `SegQueue` was measured
//! first (docs/benchmarks.md): it costs several atomic read-modify-writes
//! per message and a cache-padded head and tail per idle actor. Here a
//! `tell` is one uncontended lock and unlock, the consumer pays one lock per
//! *batch*, the two deques are swapped rather than reallocated (no
//! allocation in the steady state), and an idle mailbox is small. The
//! critical sections are a handful of instructions; a sender never waits
//! for the receiver to handle anything.
//!
//! System messages have a queue of their own in the cell (see `cell`) and
//! are handled before user messages; a `Terminated` for a watcher is queued
//! here, behind the user messages already sent.

use std::collections::VecDeque;

use crate::sync::{SpinMutex, SpinMutexGuard};

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
    /// The watched actor with this uid has terminated. Queued behind the
    /// user messages already in the mailbox, so a watcher sees everything
    /// the dead actor sent it before its `Terminated` (as in Akka).
    Terminated(u64),
    /// The receive timeout of this generation fired (`receive_timeout.rs`).
    ReceiveTimeout(u64),
}

impl<M> Envelope<M> {
    /// Runtime signals that overflow must never drop.
    fn is_signal(&self) -> bool {
        matches!(
            self,
            Envelope::Poison | Envelope::Terminated(_) | Envelope::ReceiveTimeout(_)
        )
    }
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
    /// Unbounded (the default).
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

/// A spin lock whose unlock is a plain store: a tell costs one atomic
/// read-modify-write instead of the two of a parking mutex (measured in
/// docs/benchmarks.md). Waiters yield the thread rather than burn it, so a
/// holder preempted inside its few instructions is not starved. It comes
/// from `crate::sync`, so the loom tests run this mailbox as it is.
type QueueLock<M> = SpinMutex<VecDeque<Envelope<M>>>;

pub(crate) struct Mailbox<M> {
    queue: QueueLock<M>,
    bound: Option<(usize, Overflow)>,
}

impl<M> Mailbox<M> {
    pub(crate) fn new(config: MailboxConfig) -> Self {
        match config {
            MailboxConfig::Unbounded => Mailbox {
                queue: SpinMutex::new(VecDeque::new()),
                bound: None,
            },
            MailboxConfig::Bounded { capacity, overflow } => Mailbox {
                // Allocated once here, so a bounded tell never allocates.
                queue: SpinMutex::new(VecDeque::with_capacity(capacity)),
                bound: Some((capacity, overflow)),
            },
        }
    }

    #[inline]
    fn lock(&self) -> SpinMutexGuard<'_, VecDeque<Envelope<M>>> {
        self.queue.lock()
    }

    /// Enqueues, applying the overflow strategy. `Err` holds what was dropped
    /// (the new envelope, or the evicted oldest one) for dead letters.
    #[inline]
    pub(crate) fn push(&self, env: Envelope<M>) -> Result<(), Envelope<M>> {
        let mut q = self.lock();
        match self.bound {
            Some((capacity, overflow)) if q.len() >= capacity => {
                // A graceful stop or a Terminated is never the one dropped:
                // losing it would leave the actor running forever, or a
                // watcher waiting forever.
                if env.is_signal() || overflow == Overflow::DropOldest {
                    let evicted = q.pop_front();
                    q.push_back(env);
                    evicted.map_or(Ok(()), Err)
                } else {
                    Err(env)
                }
            }
            _ => {
                q.push_back(env);
                Ok(())
            }
        }
    }

    /// Enqueues all of `msgs` under one lock if the mailbox is unbounded
    /// (then `msgs` is left empty and the answer is `true`); a bounded
    /// mailbox answers `false` and leaves `msgs` alone, because each message
    /// must meet the overflow rule, and what it drops must reach dead
    /// letters outside the lock.
    #[inline]
    pub(crate) fn push_all(&self, msgs: &mut Vec<M>) -> bool {
        if self.bound.is_some() {
            return false;
        }
        let mut q = self.lock();
        q.extend(msgs.drain(..).map(Envelope::Msg));
        true
    }

    /// Enqueues only if there is room; hands the envelope back otherwise.
    #[inline]
    pub(crate) fn try_push(&self, env: Envelope<M>) -> Result<(), Envelope<M>> {
        let mut q = self.lock();
        match self.bound {
            Some((capacity, _)) if q.len() >= capacity && !env.is_signal() => Err(env),
            _ => {
                q.push_back(env);
                Ok(())
            }
        }
    }

    /// Moves every queued envelope into `batch`, which must be empty: the two
    /// deques trade places, so both keep their capacity.
    #[inline]
    pub(crate) fn take_all(&self, batch: &mut VecDeque<Envelope<M>>) {
        debug_assert!(batch.is_empty());
        let mut q = self.lock();
        if self.bound.is_some() {
            // Keep the preallocated deque in place so a bounded tell never
            // allocates.
            batch.extend(q.drain(..));
        } else {
            std::mem::swap(&mut *q, batch);
        }
    }

    /// Removes one envelope (dead-letter draining).
    pub(crate) fn pop(&self) -> Option<Envelope<M>> {
        self.lock().pop_front()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
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

    #[test]
    fn take_all_moves_everything_in_order_and_keeps_capacity() {
        let mb = Mailbox::new(MailboxConfig::Unbounded);
        let mut batch = VecDeque::new();
        for round in 0..3 {
            for n in 0..100 {
                mb.push(Envelope::Msg(round * 100 + n)).ok();
            }
            mb.take_all(&mut batch);
            assert!(mb.is_empty());
            let got: Vec<u32> = batch.drain(..).map(msg).collect();
            assert_eq!(got, (round * 100..round * 100 + 100).collect::<Vec<_>>());
        }
    }

    #[test]
    fn push_all_appends_in_order_only_when_unbounded() {
        let mb = Mailbox::new(MailboxConfig::Unbounded);
        mb.push(Envelope::Msg(0)).ok();
        let mut run = vec![1, 2, 3];
        assert!(mb.push_all(&mut run));
        assert!(run.is_empty());
        let got: Vec<u32> = std::iter::from_fn(|| mb.pop()).map(msg).collect();
        assert_eq!(got, [0, 1, 2, 3]);

        let bounded = Mailbox::new(MailboxConfig::bounded(2, Overflow::DropNewest));
        let mut run = vec![1, 2, 3];
        assert!(!bounded.push_all(&mut run));
        assert_eq!(
            run,
            [1, 2, 3],
            "a bounded mailbox leaves the batch to the caller"
        );
        assert!(bounded.is_empty());
    }
}
