//! The system-wide event stream: publish/subscribe by event type.
//!
//! Subscribers are actors; an event of type `E` goes to every
//! `ActorRef<E>` subscribed for `E`. Publishing costs one atomic load when
//! nobody listens, so the runtime can publish lifecycle events and dead
//! letters unconditionally. Remoting publishes its own events here.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

use crate::actor::actor_ref::{ActorRef, AnyRef, ToAnyRef};
use crate::util::locks::{read, write};

/// A message that could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The intended recipient's path.
    pub recipient: String,
    /// The message's Rust type.
    pub message_type: &'static str,
    /// Why it was not delivered.
    pub reason: DeadLetterReason,
}

/// Why a message became a dead letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetterReason {
    /// The recipient had terminated.
    RecipientTerminated,
    /// A bounded mailbox was full and its overflow strategy dropped it.
    MailboxOverflow,
    /// A reply to an `ask` that had already completed or timed out.
    AskCompleted,
    /// A remote message that could not be decoded or routed.
    Undeliverable,
    /// A router had no routee for it (no routees, or a consistent-hash
    /// message without a key), or a topic no subscriber.
    NoRoutee,
    /// An actor's stash was full (`Context::stash`).
    StashOverflow,
    /// It arrived while its recipient waited for a backoff restart (or, at
    /// a `BackoffSupervisor`, while there was no child), and more messages
    /// than the backoff keeps were already waiting.
    BackoffOverflow,
    /// It waited for its target to be found (a cluster singleton that is
    /// moving, a shard whose home is not known yet), and more messages
    /// than the bound were already waiting.
    BufferOverflow,
}

/// What happened to an actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleKind {
    /// `pre_start` succeeded.
    Started,
    /// The actor was restarted after a failure.
    Restarted,
    /// The actor terminated.
    Stopped,
}

/// A lifecycle change of one actor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleEvent {
    /// The actor's path.
    pub actor: String,
    /// What happened.
    pub kind: LifecycleKind,
}

/// One subscription: the subscriber's `ActorRef<E>`, and its identity for
/// `unsubscribe_all` and the removal of terminated subscribers.
struct Subscriber {
    actor: AnyRef,
    sub: Box<dyn Any + Send + Sync>,
}

/// Publish/subscribe by event type.
#[derive(Default)]
pub struct EventStream {
    subscribers: RwLock<HashMap<TypeId, Vec<Subscriber>>>,
    count: AtomicUsize,
}

impl EventStream {
    /// Delivers every later event of type `E` to `subscriber` until it
    /// unsubscribes or terminates. True if it was added; false if it was
    /// subscribed for `E` already (it still gets each event once) or has
    /// terminated (nothing is kept for it). Subscribers of `E` that have
    /// terminated meanwhile are dropped here too.
    pub fn subscribe<E: Clone + Send + 'static>(&self, subscriber: ActorRef<E>) -> bool {
        let mut subs = write(&self.subscribers);
        let list = subs.entry(TypeId::of::<E>()).or_default();
        let before = list.len();
        list.retain(|s| !s.actor.is_terminated());
        self.count.fetch_sub(before - list.len(), Ordering::Relaxed);
        if subscriber.is_terminated()
            || list
                .iter()
                .any(|s| s.sub.downcast_ref::<ActorRef<E>>() == Some(&subscriber))
        {
            return false;
        }
        list.push(Subscriber {
            actor: subscriber.to_any(),
            sub: Box::new(subscriber),
        });
        self.count.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Stops delivering `E` to `subscriber`; true if it was subscribed.
    pub fn unsubscribe<E: Clone + Send + 'static>(&self, subscriber: &ActorRef<E>) -> bool {
        let mut subs = write(&self.subscribers);
        let Some(list) = subs.get_mut(&TypeId::of::<E>()) else {
            return false;
        };
        let before = list.len();
        list.retain(|s| s.sub.downcast_ref::<ActorRef<E>>() != Some(subscriber));
        let removed = before - list.len();
        self.count.fetch_sub(removed, Ordering::Relaxed);
        removed > 0
    }

    /// Stops delivering anything to `subscriber`: removes it (and every
    /// adapter of it) from every event type it subscribed for, as Akka's
    /// `unsubscribe(subscriber)`. True if it was subscribed for any.
    pub fn unsubscribe_all(&self, subscriber: &impl ToAnyRef) -> bool {
        let actor = subscriber.to_any_ref();
        let mut subs = write(&self.subscribers);
        let mut removed = 0;
        for list in subs.values_mut() {
            let before = list.len();
            list.retain(|s| s.actor != actor);
            removed += before - list.len();
        }
        self.count.fetch_sub(removed, Ordering::Relaxed);
        removed > 0
    }

    /// Sends `event` to every subscriber of `E`. Terminated subscribers are
    /// dropped from the list.
    pub fn publish<E: Clone + Send + 'static>(&self, event: E) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        // Told with no lock held: a tell may publish again (an adapter's
        // mapping, a stopped subscriber's message becoming a dead letter),
        // and a nested publish that drops a stale subscriber takes the
        // write lock, which would wait for ever behind this read lock.
        let subscribers: Vec<ActorRef<E>> = {
            let subs = read(&self.subscribers);
            let Some(list) = subs.get(&TypeId::of::<E>()) else {
                return;
            };
            list.iter()
                .filter_map(|s| s.sub.downcast_ref::<ActorRef<E>>().cloned())
                .collect()
        };
        let mut stale = false;
        for r in &subscribers {
            if r.is_terminated() {
                stale = true;
            } else {
                r.tell(event.clone());
            }
        }
        if stale {
            let mut subs = write(&self.subscribers);
            if let Some(list) = subs.get_mut(&TypeId::of::<E>()) {
                let before = list.len();
                list.retain(|s| !s.actor.is_terminated());
                self.count.fetch_sub(before - list.len(), Ordering::Relaxed);
            }
        }
    }

    /// True when anyone subscribes to `E`.
    pub fn has_subscribers<E: 'static>(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
            && read(&self.subscribers)
                .get(&TypeId::of::<E>())
                .is_some_and(|l| !l.is_empty())
    }
}
