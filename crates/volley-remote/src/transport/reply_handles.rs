//! The reply handles of this node's asks that wait for a remote answer.
//!
//! When a local ask's reply handle travels to a peer (inside a request), it
//! is declared by its correlation id (its uid) instead of a path, and kept
//! here until the reply names that id. A handle is taken out by its first
//! reply, so a second reply, or one after the ask timed out, finds nothing
//! and becomes a dead letter, as a late reply is in Akka.

use std::collections::HashMap;
use std::sync::Mutex;

use volley::AnyRef;

use super::support::lock;

/// Handles waiting for replies, by correlation id.
#[derive(Default)]
pub(crate) struct ReplyHandles {
    waiting: Mutex<HashMap<u64, AnyRef>>,
}

/// How many handles may wait before finished ones are swept out.
const SWEEP_FROM: usize = 1024;

impl ReplyHandles {
    /// Lets a reply find `handle` by its correlation id. Handles whose ask
    /// has ended are swept out whenever the table doubles, so asks that
    /// time out do not pile up.
    pub(crate) fn register(&self, handle: &AnyRef) {
        let mut waiting = lock(&self.waiting);
        if waiting.len() >= SWEEP_FROM && waiting.len().is_power_of_two() {
            waiting.retain(|_, h| !h.is_terminated());
        }
        waiting.insert(handle.uid(), handle.clone());
    }

    /// The waiting handle `correlation`, taken out: it accepts one reply.
    pub(crate) fn take(&self, correlation: u64) -> Option<AnyRef> {
        lock(&self.waiting)
            .remove(&correlation)
            .filter(|h| !h.is_terminated())
    }
}

/// A local reply handle must be registered here so that replies can find
/// it; a remote one (an ask of another node, passed on) is addressed by
/// that node's own correlation id.
pub(crate) fn is_local_reply_handle(actor: &AnyRef) -> bool {
    actor.is_reply_handle() && actor.as_remote().is_none()
}
