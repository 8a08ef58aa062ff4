//! Replies to this node's asks, delivered in runs.
//!
//! A node whose tasks ask a peer many times at once gets the answers back
//! to back, hundreds in one read buffer. Handled one by one, each Reply
//! paid the generic frame decode, a type lookup in the registry's map,
//! the check of which association it came on and a lock of the
//! reply-handle table. Consecutive Replies of one type and serializer are
//! gathered instead (at most [`RUN_CAP`], borrowed from the read buffer,
//! like user messages in `delivery.rs`) and delivered with one type
//! lookup in the connection's cache, one association check and one lock
//! of the table. Each reply still goes to its own handle, in the order
//! the Replies came, and a run is delivered before any other frame, so
//! nothing is reordered.

use crate::serialization::SerializerId;
use crate::transport::control::reply_handles::NotTaken;
use crate::transport::inbound::delivery::RUN_CAP;
use crate::transport::inbound::reader::Reader;
use crate::transport::inbound::InboundContext;
use crate::transport::node::{not_delivered, Undeliverable};
use crate::transport::registry::DeliverError;
use crate::wire::Reply;
use volley::DeadLetterReason;

/// Consecutive Replies of one type and serializer.
pub(crate) struct ReplyRun<'buf> {
    type_id: u32,
    serializer: SerializerId,
    len: usize,
    correlations: [u64; RUN_CAP],
    payloads: [&'buf [u8]; RUN_CAP],
}

impl<'buf> ReplyRun<'buf> {
    pub(crate) fn new() -> Self {
        ReplyRun {
            type_id: 0,
            serializer: SerializerId(0),
            len: 0,
            correlations: [0; RUN_CAP],
            payloads: [&[]; RUN_CAP],
        }
    }

    /// A run of one Reply.
    pub(crate) fn alone(r: Reply<'buf>) -> Self {
        let mut run = ReplyRun::new();
        run.start(&r);
        run.append(r);
        run
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `r` can join the run as it is: same type and serializer,
    /// and room left.
    #[inline]
    pub(crate) fn takes(&self, r: &Reply<'_>) -> bool {
        self.len == 0
            || (self.len < RUN_CAP && self.type_id == r.type_id && self.serializer == r.serializer)
    }

    /// Adds `r`; the caller checked [`ReplyRun::takes`] or flushed.
    #[inline]
    pub(crate) fn push(&mut self, r: Reply<'buf>) {
        if self.len == 0 {
            self.start(&r);
        }
        self.append(r);
    }

    fn start(&mut self, r: &Reply<'_>) {
        self.type_id = r.type_id;
        self.serializer = r.serializer;
    }

    fn append(&mut self, r: Reply<'buf>) {
        self.correlations[self.len] = r.correlation;
        self.payloads[self.len] = r.payload;
        self.len += 1;
    }
}

impl<C: InboundContext> Reader<'_, C> {
    /// Delivers the Replies `run` holds, each to the ask it answers, and
    /// empties the run.
    pub(super) fn replies(&mut self, run: &mut ReplyRun<'_>) {
        let len = std::mem::take(&mut run.len);
        if len == 0 {
            return;
        }
        let (core, peer) = (&**self.core, &self.peer.address);
        let (type_id, serializer) = (run.type_id, run.serializer);
        let Some(cached) = self.types.find(core, type_id) else {
            for _ in 0..len {
                core.undeliverable(peer, Undeliverable::UnknownType { type_id });
            }
            return;
        };
        let ty = cached.ty;
        if serializer != ty.serializer {
            for _ in 0..len {
                let error = DeliverError::WrongSerializer(serializer);
                core.undeliverable(peer, not_delivered(ty.name, type_id, error));
            }
            return;
        }
        // Only the node the ask went to may answer it, unless the operator
        // lets a node it was forwarded to answer too.
        let from_association = match core.trust().replies_from_any_node {
            true => None,
            // Ids start at 1: without an association, no request went there.
            false => Some(
                self.peer
                    .association
                    .as_ref()
                    .map(|a| a.id)
                    .or_else(|| core.associations().find(peer).map(|a| a.id))
                    .unwrap_or(0),
            ),
        };
        let mut taken = std::mem::take(&mut self.taken);
        core.reply_handles()
            .take_run(&run.correlations[..len], from_association, &mut taken);
        for ((handle, payload), correlation) in taken
            .drain(..)
            .zip(&run.payloads[..len])
            .zip(&run.correlations[..len])
        {
            let handle = match handle {
                Ok(handle) => handle,
                Err(NotTaken::NotWaiting) => {
                    // The ask timed out or was answered already: an ordinary
                    // dead letter, as a late reply is in Akka.
                    tracing::debug!(%peer, correlation, "reply to an ask that no longer waits");
                    core.count_dead_letter(peer, DeadLetterReason::AskCompleted);
                    continue;
                }
                Err(NotTaken::WrongNode) => {
                    let what = "a reply to an ask that went to another node";
                    core.trust().refused(core, peer, what);
                    continue;
                }
            };
            if let Err(error) = (ty.deliver_to)(payload, &self.imports, &handle) {
                core.undeliverable(peer, not_delivered(ty.name, type_id, error));
            }
        }
        self.taken = taken;
    }
}
