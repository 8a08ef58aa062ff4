//! The reply handles of this node's asks that wait for a remote answer.
//!
//! When a local ask's reply handle travels to a peer (inside a request), it
//! is declared by a correlation id instead of a path, and kept here until
//! the reply names that id. A handle is taken out by its first reply, so a
//! second reply, or one after the ask timed out, finds nothing and becomes
//! a dead letter, as a late reply is in Akka.
//!
//! The correlation id is a keyed hash of the handle's uid (SipHash with
//! this process's random keys), not the uid itself: uids are counted, so a
//! peer that saw one could guess the next asks' ids and answer them in the
//! asked node's place. And a reply is taken only from the association the
//! request was declared to, unless `trust.replies_from_any_node` lets a
//! node the request was forwarded to answer.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

use volley::AnyRef;

use super::association::AssociationId;
use super::support::lock;

/// A waiting handle and the association its request went to.
struct Waiting {
    handle: AnyRef,
    association: Option<AssociationId>,
}

/// Handles waiting for replies, by correlation id.
pub(crate) struct ReplyHandles {
    waiting: Mutex<HashMap<u64, Waiting>>,
    /// The secret keys of the correlation ids.
    keys: RandomState,
}

impl Default for ReplyHandles {
    fn default() -> Self {
        ReplyHandles {
            waiting: Mutex::new(HashMap::new()),
            keys: RandomState::new(),
        }
    }
}

/// Why a reply found no handle to take.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// No ask waits under that id: it was answered, timed out, or never
    /// existed (a late reply, or a guess).
    NotWaiting,
    /// An ask waits under that id, but its request went to another node.
    WrongNode,
}

/// How many handles may wait before finished ones are swept out.
const SWEEP_FROM: usize = 1024;

impl ReplyHandles {
    /// The correlation id `handle` is declared by on the wire; never 0.
    pub(crate) fn correlation_of(&self, handle: &AnyRef) -> u64 {
        self.keys.hash_one(handle.uid()).max(1)
    }

    /// Lets a reply from the association `association` find `handle` by its
    /// correlation id, which it returns. Handles whose ask has ended are
    /// swept out whenever the table doubles, so asks that time out do not
    /// pile up.
    pub(crate) fn register(&self, handle: &AnyRef, association: Option<AssociationId>) -> u64 {
        let correlation = self.correlation_of(handle);
        let mut waiting = lock(&self.waiting);
        if waiting.len() >= SWEEP_FROM && waiting.len().is_power_of_two() {
            waiting.retain(|_, w| !w.handle.is_terminated());
        }
        waiting.insert(
            correlation,
            Waiting {
                handle: handle.clone(),
                association,
            },
        );
        correlation
    }

    /// The waiting handle `correlation`, left in place.
    pub(crate) fn find(&self, correlation: u64) -> Option<AnyRef> {
        lock(&self.waiting)
            .get(&correlation)
            .map(|w| w.handle.clone())
            .filter(|h| !h.is_terminated())
    }

    /// The waiting handle `correlation`, taken out: it accepts one reply.
    /// `from`: the association the reply came on; `None` when any node may
    /// answer.
    pub(crate) fn take(
        &self,
        correlation: u64,
        from: Option<AssociationId>,
    ) -> Result<AnyRef, NotTaken> {
        let mut waiting = lock(&self.waiting);
        let entry = waiting.get(&correlation).ok_or(NotTaken::NotWaiting)?;
        if from.is_some() && entry.association.is_some() && entry.association != from {
            return Err(NotTaken::WrongNode);
        }
        let taken = waiting.remove(&correlation).expect("found above");
        drop(waiting);
        Some(taken.handle)
            .filter(|h| !h.is_terminated())
            .ok_or(NotTaken::NotWaiting)
    }
}

/// A local reply handle must be registered here so that replies can find
/// it; a remote one (an ask of another node, passed on) is addressed by
/// that node's own correlation id.
pub(crate) fn is_local_reply_handle(actor: &AnyRef) -> bool {
    actor.is_reply_handle() && actor.as_remote().is_none()
}
