//! Mailboxes: the user-message queue of one actor.
//!
//! A mailbox is a `VecDeque` behind a spin lock that the consumer empties in
//! one swap per activation. crossbeam's lock-free `SegQueue` was measured
//! first (docs/design-notes.md#mailbox-queue): it costs several atomic read-modify-writes
//! per message and a cache-padded head and tail per idle actor. Here a
//! `tell` is one uncontended lock and unlock, the consumer pays one lock per
//! *batch*, the two deques are swapped rather than reallocated (no
//! allocation in the steady state), and an idle mailbox is small. The
//! critical sections are a handful of instructions; a sender never waits
//! for the receiver to handle anything.
//!
//! A bounded mailbox, or an ordered one (stable priority or control-aware,
//! both sorted by a function of the message, kept sorted on insert), has a
//! `Policy`; the default mailbox has none, so its tell checks one `None`.
//! An ordered mailbox hands the actor one message per take, so a message
//! that arrives while the actor works still goes ahead of those waiting,
//! at the price of a lock per message (Akka's priority mailboxes likewise
//! dequeue one at a time).
//!
//! System messages have a queue of their own in the cell (see `cell`) and
//! are handled before user messages; a `Terminated` for a watcher is queued
//! here, behind the user messages already sent.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::observability::trace_context::{Parent, ParentSlots};
use crate::util::sync::{SpinMutex, SpinMutexGuard};

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
    /// The receive timeout of this generation fired (`time/receive_timeout.rs`).
    ReceiveTimeout(u64),
    /// An ordinary message with the span context it was sent in, kept in
    /// slot `parent` of the mailbox's [`ParentSlots`]: only a traced
    /// mailbox makes these (`trace_context`). The context stays out of the
    /// envelope so that `Envelope<M>` needs no drop glue of its own: every
    /// actor's queues would pay for it when dropped, traced or not.
    Traced { msg: M, parent: u32 },
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
/// read-modify-write instead of the two of a parking mutex
/// (docs/design-notes.md#mailbox-lock). Waiters yield the thread rather than burn it, so a
/// holder preempted inside its few instructions is not starved. It comes
/// from `crate::util::sync`, so the loom tests run this mailbox as it is.
type QueueLock<M> = SpinMutex<VecDeque<Envelope<M>>>;

/// The order of an ordered mailbox: lower values are handled first. A
/// thin pointer (an `Arc` of a `Box`), so props that carry none are only
/// a word bigger, which spawning copies a few times.
pub(crate) type Priority<M> = Arc<Box<dyn Fn(&M) -> i32 + Send + Sync>>;

/// The largest empty queue a [`Mailbox::push_batch`] trades for its batch:
/// a mailbox that a burst grew keeps its buffer, rather than handing it to
/// whoever stages batches (a remote connection, for as long as it lives).
const MAX_TRADED_CAPACITY: usize = 1024;

pub(crate) struct Mailbox<M> {
    queue: QueueLock<M>,
    /// `None` for the default, unbounded FIFO mailbox, so that its tell
    /// checks one field, as it did before bounds and orders existed.
    policy: Option<Box<Policy<M>>>,
}

/// What a mailbox that is not the default one does differently.
struct Policy<M> {
    bound: Option<(usize, Overflow)>,
    /// Set for a priority or control-aware mailbox: the queue is kept
    /// sorted by it, stable among equals.
    order: Option<Priority<M>>,
    /// `[tracing] message_spans`: a message carries the sender's span,
    /// kept here.
    parents: Option<ParentSlots>,
}

impl<M> Policy<M> {
    /// What is queued for `env`: in a traced mailbox a user message goes
    /// with the sender's span. Called before the queue is locked, since
    /// looking up the current span asks the subscriber.
    #[inline]
    fn prepare(&self, env: Envelope<M>) -> Envelope<M> {
        match env {
            Envelope::Msg(msg) => match &self.parents {
                Some(slots) => match Parent::current() {
                    Some(parent) => Envelope::Traced {
                        msg,
                        parent: slots.put(parent),
                    },
                    None => Envelope::Msg(msg),
                },
                None => Envelope::Msg(msg),
            },
            env => env,
        }
    }

    /// Where `env` goes in `q`, which is sorted: behind every envelope of
    /// the same or a lower value (so equals stay in arrival order).
    /// Runtime signals sort behind every message queued before them, as
    /// the lowest priority.
    fn position(&self, q: &VecDeque<Envelope<M>>, env: &Envelope<M>) -> usize {
        let Some(order) = &self.order else {
            return q.len();
        };
        let rank = |e: &Envelope<M>| match e {
            Envelope::Msg(m) | Envelope::Timer { msg: m, .. } => order.as_ref()(m),
            Envelope::Traced { msg: m, .. } => order.as_ref()(m),
            _ => i32::MAX,
        };
        let p = rank(env);
        q.partition_point(|e| rank(e) <= p)
    }

    fn push(&self, q: &mut VecDeque<Envelope<M>>, env: Envelope<M>) -> Result<(), Envelope<M>> {
        match self.bound {
            // A graceful stop, a Terminated or a receive timeout is never
            // dropped, and never pushes out a message queued before it
            // (which it promises to come after): it goes in past the
            // bound. Losing it would leave the actor running for ever, or
            // a watcher waiting for ever. A second graceful stop adds
            // nothing to one already queued, so it is not kept there: what
            // goes past the bound stays bounded (one stop, one
            // `Terminated` per watched actor, one receive timeout).
            Some((capacity, _)) if q.len() >= capacity && env.is_signal() => {
                if matches!(env, Envelope::Poison)
                    && q.iter().any(|e| matches!(e, Envelope::Poison))
                {
                    return Err(env);
                }
                let at = self.position(q, &env);
                q.insert(at, env);
                Ok(())
            }
            Some((capacity, overflow)) if q.len() >= capacity => {
                if overflow == Overflow::DropNewest {
                    return Err(env);
                }
                // The one evicted is the oldest message (in an ordered
                // mailbox, the one that would be handled last), never a
                // signal.
                let victim = match self.order {
                    None => q.iter().position(|e| !e.is_signal()),
                    Some(_) => q.iter().rposition(|e| !e.is_signal()),
                };
                let Some(victim) = victim.and_then(|i| q.remove(i)) else {
                    return Err(env);
                };
                let at = self.position(q, &env);
                q.insert(at, env);
                Err(victim)
            }
            _ => {
                let at = self.position(q, &env);
                q.insert(at, env);
                Ok(())
            }
        }
    }
}

impl<M> Mailbox<M> {
    pub(crate) fn new(config: MailboxConfig, order: Option<Priority<M>>, traced: bool) -> Self {
        let bound = match (config, &order) {
            // Spawn's common case, kept as short as it was.
            (MailboxConfig::Unbounded, None) if !traced => {
                return Mailbox {
                    queue: SpinMutex::new(VecDeque::new()),
                    policy: None,
                }
            }
            (MailboxConfig::Unbounded, _) => None,
            (MailboxConfig::Bounded { capacity, overflow }, _) => Some((capacity, overflow)),
        };
        Mailbox {
            // A bounded mailbox is allocated once here, so its tell never
            // allocates.
            queue: SpinMutex::new(VecDeque::with_capacity(bound.map_or(0, |(c, _)| c))),
            policy: Some(Box::new(Policy {
                bound,
                order,
                parents: traced.then(ParentSlots::default),
            })),
        }
    }

    #[inline]
    fn lock(&self) -> SpinMutexGuard<'_, VecDeque<Envelope<M>>> {
        self.queue.lock()
    }

    /// Enqueues, applying the overflow strategy. `Err` holds what was dropped
    /// (the new envelope, or the evicted oldest one) for dead letters. The
    /// default mailbox's push is inlined into the sender; a policy's stays
    /// out of line, so that its size does not keep the common case a call.
    #[inline]
    pub(crate) fn push(&self, env: Envelope<M>) -> Result<(), Envelope<M>> {
        match &self.policy {
            None => {
                self.lock().push_back(env);
                Ok(())
            }
            Some(policy) => self.push_with_policy(policy, env),
        }
    }

    /// [`Mailbox::push`] for a bounded, ordered or traced mailbox.
    #[inline(never)]
    fn push_with_policy(&self, policy: &Policy<M>, env: Envelope<M>) -> Result<(), Envelope<M>> {
        let env = policy.prepare(env);
        policy.push(&mut self.lock(), env)
    }

    /// Where a traced mailbox keeps its messages' span contexts; `None`
    /// for any other.
    #[inline]
    pub(crate) fn parents(&self) -> Option<&ParentSlots> {
        self.policy.as_ref()?.parents.as_ref()
    }

    /// Enqueues all of `msgs` under one lock if the mailbox is the default
    /// one (then `msgs` is left empty and the answer is `true`); any other
    /// answers `false` and leaves `msgs` alone, because each message must
    /// meet the overflow rule or find its place, and what a bounded one
    /// drops must reach dead letters outside the lock.
    #[inline]
    pub(crate) fn push_all(&self, msgs: &mut Vec<M>) -> bool {
        if self.policy.is_some() {
            return false;
        }
        let mut q = self.lock();
        q.extend(msgs.drain(..).map(Envelope::Msg));
        true
    }

    /// Enqueues the whole of `batch` under one lock if the mailbox is the
    /// default one (then `batch` is left empty and the answer is `true`):
    /// an empty queue trades places with the batch's buffer, so no message
    /// moves (the batch goes home with the queue's empty buffer, unless a
    /// burst grew that past [`MAX_TRADED_CAPACITY`]); a queue that holds
    /// messages takes the batch's behind them in one copy. A vector becomes
    /// a deque and an empty deque a vector in place, so neither way moves a
    /// message more than that. Any other mailbox answers `false` and leaves
    /// `batch` alone, as [`Mailbox::push_all`] does.
    #[inline]
    pub(crate) fn push_batch(&self, batch: &mut Vec<Envelope<M>>) -> bool {
        if self.policy.is_some() {
            return false;
        }
        let mut staged = VecDeque::from(std::mem::take(batch));
        let mut q = self.lock();
        if q.is_empty() && q.capacity() <= MAX_TRADED_CAPACITY {
            std::mem::swap(&mut *q, &mut staged);
        } else {
            q.append(&mut staged);
        }
        drop(q);
        *batch = Vec::from(staged);
        true
    }

    /// Enqueues only if there is room; hands the envelope back otherwise.
    #[inline]
    pub(crate) fn try_push(&self, env: Envelope<M>) -> Result<(), Envelope<M>> {
        match &self.policy {
            None => {
                self.lock().push_back(env);
                Ok(())
            }
            Some(policy) => {
                let env = policy.prepare(env);
                let mut q = self.lock();
                match policy.bound {
                    Some((capacity, _)) if q.len() >= capacity && !env.is_signal() => {
                        drop(q);
                        Err(self.untraced(env))
                    }
                    _ => {
                        let at = policy.position(&q, &env);
                        q.insert(at, env);
                        Ok(())
                    }
                }
            }
        }
    }

    /// Moves queued envelopes into `batch`, which must be empty: all of
    /// them, the two deques trading places so both keep their capacity;
    /// from an ordered mailbox only the first, so that a message that
    /// arrives while the actor works still goes ahead of those waiting.
    #[inline]
    pub(crate) fn take_all(&self, batch: &mut VecDeque<Envelope<M>>) {
        debug_assert!(batch.is_empty());
        match &self.policy {
            None => std::mem::swap(&mut *self.lock(), batch),
            Some(policy) => self.take_with_policy(policy, batch),
        }
    }

    /// [`Mailbox::take_all`] for a bounded, ordered or traced mailbox, out
    /// of line for the same reason as [`Mailbox::push_with_policy`].
    #[inline(never)]
    fn take_with_policy(&self, policy: &Policy<M>, batch: &mut VecDeque<Envelope<M>>) {
        let mut q = self.lock();
        match policy.order {
            Some(_) => batch.extend(q.pop_front()),
            // Keep the preallocated deque in place so a bounded tell never
            // allocates.
            None => batch.extend(q.drain(..)),
        }
    }

    /// A refused message handed back as it was sent, its span context
    /// released.
    fn untraced(&self, env: Envelope<M>) -> Envelope<M> {
        match env {
            Envelope::Traced { msg, parent } => {
                if let Some(slots) = self.parents() {
                    slots.take(parent);
                }
                Envelope::Msg(msg)
            }
            env => env,
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

    impl<M> Mailbox<M> {
        fn new_fifo(config: MailboxConfig) -> Self {
            Mailbox::new(config, None, false)
        }
    }

    fn ordered(config: MailboxConfig) -> Mailbox<u32> {
        // Tens digit is the priority: 5 before 15 before 25.
        Mailbox::new(
            config,
            Some(Arc::new(Box::new(|m: &u32| (*m / 10) as i32))),
            false,
        )
    }

    fn drain(mb: &Mailbox<u32>) -> Vec<u32> {
        std::iter::from_fn(|| mb.pop()).map(msg).collect()
    }

    #[test]
    fn an_ordered_mailbox_sorts_by_priority_and_keeps_arrival_order_among_equals() {
        let mb = ordered(MailboxConfig::Unbounded);
        for m in [21, 11, 1, 22, 2, 12, 3] {
            mb.push(Envelope::Msg(m)).ok();
        }
        assert_eq!(drain(&mb), [1, 2, 3, 11, 12, 21, 22]);
    }

    #[test]
    fn signals_go_behind_the_messages_queued_before_them() {
        let mb = ordered(MailboxConfig::Unbounded);
        mb.push(Envelope::Msg(25)).ok();
        mb.push(Envelope::Poison).ok();
        mb.push(Envelope::Msg(5)).ok();
        let got: Vec<_> = std::iter::from_fn(|| mb.pop())
            .map(|e| match e {
                Envelope::Msg(m) => m as i64,
                _ => -1,
            })
            .collect();
        assert_eq!(got, [5, 25, -1]);
    }

    #[test]
    fn a_full_ordered_mailbox_evicts_what_would_be_handled_last() {
        let mb = ordered(MailboxConfig::bounded(2, Overflow::DropOldest));
        mb.push(Envelope::Msg(20)).ok();
        mb.push(Envelope::Msg(10)).ok();
        assert_eq!(mb.push(Envelope::Msg(1)).map_err(msg), Err(20));
        let newest = ordered(MailboxConfig::bounded(1, Overflow::DropNewest));
        newest.push(Envelope::Msg(20)).ok();
        assert_eq!(newest.push(Envelope::Msg(1)).map_err(msg), Err(1));
        assert_eq!(newest.try_push(Envelope::Msg(2)).map_err(msg), Err(2));
        assert_eq!(drain(&mb), [1, 10]);
    }

    #[test]
    fn an_ordered_mailbox_hands_out_one_envelope_per_take() {
        let mb = ordered(MailboxConfig::Unbounded);
        let mut batch = VecDeque::new();
        mb.push(Envelope::Msg(20)).ok();
        mb.push(Envelope::Msg(21)).ok();
        mb.take_all(&mut batch);
        assert_eq!(batch.drain(..).map(msg).collect::<Vec<_>>(), [20]);
        // Arrives while the first is handled: goes ahead of the waiting 21.
        mb.push(Envelope::Msg(3)).ok();
        let mut run = vec![4];
        assert!(
            !mb.push_all(&mut run),
            "an ordered mailbox places each message"
        );
        assert_eq!(drain(&mb), [3, 21]);
    }

    fn msg(env: Envelope<u32>) -> u32 {
        match env {
            Envelope::Msg(m) => m,
            _ => panic!("not a message"),
        }
    }

    #[test]
    fn drop_newest_keeps_the_oldest() {
        let mb = Mailbox::new_fifo(MailboxConfig::bounded(2, Overflow::DropNewest));
        assert!(mb.push(Envelope::Msg(1)).is_ok());
        assert!(mb.push(Envelope::Msg(2)).is_ok());
        assert_eq!(mb.push(Envelope::Msg(3)).map_err(msg), Err(3));
        assert_eq!(msg(mb.pop().unwrap()), 1);
        assert_eq!(msg(mb.pop().unwrap()), 2);
    }

    #[test]
    fn drop_oldest_evicts_the_head() {
        let mb = Mailbox::new_fifo(MailboxConfig::bounded(2, Overflow::DropOldest));
        mb.push(Envelope::Msg(1)).ok();
        mb.push(Envelope::Msg(2)).ok();
        assert_eq!(mb.push(Envelope::Msg(3)).map_err(msg), Err(1));
        assert_eq!(msg(mb.pop().unwrap()), 2);
        assert_eq!(msg(mb.pop().unwrap()), 3);
    }

    fn kinds(mb: &Mailbox<u32>) -> Vec<String> {
        std::iter::from_fn(|| mb.pop())
            .map(|e| match e {
                Envelope::Msg(m) => m.to_string(),
                Envelope::Poison => "stop".into(),
                Envelope::Terminated(uid) => format!("terminated {uid}"),
                _ => "other".into(),
            })
            .collect()
    }

    #[test]
    fn a_signal_into_a_full_mailbox_goes_past_the_bound_and_evicts_nothing() {
        for overflow in [Overflow::DropNewest, Overflow::DropOldest] {
            let mb = Mailbox::new_fifo(MailboxConfig::bounded(2, overflow));
            mb.push(Envelope::Msg(1)).ok();
            mb.push(Envelope::Msg(2)).ok();
            assert!(mb.push(Envelope::Terminated(7)).is_ok(), "{overflow:?}");
            assert!(mb.push(Envelope::Poison).is_ok(), "{overflow:?}");
            assert_eq!(kinds(&mb), ["1", "2", "terminated 7", "stop"]);
        }
    }

    #[test]
    fn drop_oldest_never_evicts_a_signal() {
        let mb = Mailbox::new_fifo(MailboxConfig::bounded(2, Overflow::DropOldest));
        mb.push(Envelope::Poison).ok();
        mb.push(Envelope::Msg(1)).ok();
        assert_eq!(mb.push(Envelope::Msg(2)).map_err(msg), Err(1));
        assert_eq!(mb.push(Envelope::Msg(3)).map_err(msg), Err(2));
        assert_eq!(kinds(&mb), ["stop", "3"]);

        // Ordered: signals rank last, yet the message evicted is the last
        // message, not the signal behind it.
        let mb = ordered(MailboxConfig::bounded(2, Overflow::DropOldest));
        mb.push(Envelope::Msg(20)).ok();
        mb.push(Envelope::Poison).ok();
        assert_eq!(mb.push(Envelope::Msg(10)).map_err(msg), Err(20));
        assert_eq!(mb.push(Envelope::Msg(5)).map_err(msg), Err(10));
        assert_eq!(kinds(&mb), ["5", "stop"]);

        // A second stop past the bound is not kept (nor counted).
        let mb = Mailbox::new_fifo(MailboxConfig::bounded(1, Overflow::DropNewest));
        mb.push(Envelope::Msg(1)).ok();
        assert!(mb.push(Envelope::Poison).is_ok());
        for _ in 0..3 {
            assert!(matches!(mb.push(Envelope::Poison), Err(Envelope::Poison)));
        }
        assert_eq!(kinds(&mb), ["1", "stop"]);

        // Nothing but signals: the new message is the one dropped.
        let mb = Mailbox::new_fifo(MailboxConfig::bounded(1, Overflow::DropOldest));
        mb.push(Envelope::Poison).ok();
        assert_eq!(mb.push(Envelope::Msg(1)).map_err(msg), Err(1));
    }

    #[test]
    fn try_push_hands_the_message_back_when_full() {
        let mb = Mailbox::new_fifo(MailboxConfig::bounded(1, Overflow::DropOldest));
        assert!(mb.try_push(Envelope::Msg(1)).is_ok());
        assert_eq!(mb.try_push(Envelope::Msg(2)).map_err(msg), Err(2));
        assert_eq!(mb.len(), 1);
    }

    #[test]
    fn take_all_moves_everything_in_order_and_keeps_capacity() {
        let mb = Mailbox::new_fifo(MailboxConfig::Unbounded);
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
        let mb = Mailbox::new_fifo(MailboxConfig::Unbounded);
        mb.push(Envelope::Msg(0)).ok();
        let mut run = vec![1, 2, 3];
        assert!(mb.push_all(&mut run));
        assert!(run.is_empty());
        let got: Vec<u32> = std::iter::from_fn(|| mb.pop()).map(msg).collect();
        assert_eq!(got, [0, 1, 2, 3]);

        let bounded = Mailbox::new_fifo(MailboxConfig::bounded(2, Overflow::DropNewest));
        let mut run = vec![1, 2, 3];
        assert!(!bounded.push_all(&mut run));
        assert_eq!(
            run,
            [1, 2, 3],
            "a bounded mailbox leaves the batch to the caller"
        );
        assert!(bounded.is_empty());
    }

    #[test]
    fn push_batch_trades_with_an_empty_queue_and_appends_to_a_busy_one() {
        let envelopes = |ns: &[u32]| ns.iter().map(|&n| Envelope::Msg(n)).collect::<Vec<_>>();
        let mb = Mailbox::new_fifo(MailboxConfig::Unbounded);
        let mut taken = VecDeque::with_capacity(32);
        // Empty: the mailbox takes the batch's buffer, the batch goes home
        // with the mailbox's (empty) one.
        mb.take_all(&mut taken);
        let mut batch = envelopes(&[1, 2]);
        let buffer = batch.as_ptr();
        assert!(mb.push_batch(&mut batch));
        assert!(batch.is_empty());
        assert_ne!(batch.as_ptr(), buffer, "traded, not copied");
        // Busy: behind what is queued, in order, and the batch keeps its
        // buffer.
        let mut batch = Vec::with_capacity(8);
        batch.extend(envelopes(&[3, 4, 5]));
        let buffer = batch.as_ptr();
        assert!(mb.push_batch(&mut batch));
        assert!(batch.is_empty());
        assert_eq!((batch.as_ptr(), batch.capacity()), (buffer, 8));
        let got: Vec<u32> = std::iter::from_fn(|| mb.pop()).map(msg).collect();
        assert_eq!(got, [1, 2, 3, 4, 5]);

        // An empty queue that a burst grew keeps its buffer.
        for n in 0..(MAX_TRADED_CAPACITY as u32 + 1) {
            mb.push(Envelope::Msg(n)).ok();
        }
        while mb.pop().is_some() {}
        let mut batch = envelopes(&[6]);
        let buffer = batch.as_ptr();
        assert!(mb.push_batch(&mut batch));
        assert_eq!(batch.as_ptr(), buffer, "not traded");
        assert_eq!(
            std::iter::from_fn(|| mb.pop()).map(msg).collect::<Vec<_>>(),
            [6]
        );

        let bounded = Mailbox::new_fifo(MailboxConfig::bounded(2, Overflow::DropNewest));
        let mut batch = envelopes(&[1, 2, 3]);
        assert!(!bounded.push_batch(&mut batch));
        assert_eq!(
            batch.len(),
            3,
            "a bounded mailbox leaves the batch to the caller"
        );
        assert!(bounded.is_empty());
    }

    #[test]
    fn a_traced_mailbox_keeps_contexts_beside_the_queue_and_frees_them() {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber =
            tracing_subscriber::registry().with(tracing_subscriber::filter::LevelFilter::INFO);
        tracing::subscriber::with_default(subscriber, || {
            let mb = Mailbox::new(MailboxConfig::bounded(2, Overflow::DropNewest), None, true);
            let slots = mb.parents().expect("a traced mailbox has slots");
            // Outside a span: a plain message, no slot.
            mb.push(Envelope::Msg(1)).ok();
            let span = tracing::info_span!("sender");
            span.in_scope(|| {
                mb.push(Envelope::Msg(2)).ok();
                // Full: handed back as it was sent, its slot released.
                match mb.try_push(Envelope::Msg(3)) {
                    Err(Envelope::Msg(3)) => {}
                    _ => panic!("a full mailbox hands the message back untraced"),
                }
            });
            let mut batch = VecDeque::new();
            mb.take_all(&mut batch);
            assert!(matches!(batch.pop_front(), Some(Envelope::Msg(1))));
            let Some(Envelope::Traced { msg: 2, parent }) = batch.pop_front() else {
                panic!("the message told in a span carries it");
            };
            match slots.take(parent) {
                Some(Parent::Local(from)) => assert_eq!(from.id(), span.id()),
                _ => panic!("the sender's span is in the slot"),
            }
            assert!(slots.take(parent).is_none());
        });
    }

    #[test]
    fn an_untraced_envelope_needs_no_drop_glue() {
        // Every actor's queues are dropped when it stops; glue would make
        // each drop walk the queue (measured on spawn/stop).
        assert!(!std::mem::needs_drop::<Envelope<u32>>());
    }
}
