//! What a region sends other regions, batched: the entities' messages for
//! one other region that a region handles in a row go as one remote
//! message ([`ShardEnvelope::Messages`]) instead of one each.
//!
//! Why: a remote message costs a frame of its own on both sides (the
//! lane's lock, the frame's header and recipient, on the other node the
//! frame's decode, a push into the `deliver` child's mailbox, its
//! activation and its push into the region's); an entity's message is
//! a few dozen bytes. One frame for many of them leaves only their
//! encoding per message.
//!
//! The rules that keep the order and the lanes:
//! - a batch goes to one `deliver` child and holds the messages in the
//!   order the region took them; a message that goes alone (below)
//!   first sends the batch of its destination, and so does a hand-off
//!   marker, so nothing overtakes anything on the way to a region;
//! - a batch is sent when it holds `remote_batch_messages` messages or
//!   about `remote_batch_bytes` bytes, and otherwise when the region
//!   handles its own [`RegionMsg::SendBatches`], which it sends itself
//!   when the first message is put in: behind what was in its mailbox
//!   then, so a batch never waits for more than the region's queue;
//! - the size is the message's bincode encoding, measured when it is put
//!   in: a message that cannot be measured so (it holds an `ActorRef`,
//!   whose encoding needs the connection) or that is larger than the
//!   batch limit goes alone. The limit stays far below the remote
//!   transport's `large_message_threshold`, so a batch takes the same
//!   lane as its messages would have one by one: one lane keeps the
//!   order, two might not.
//!
//! [`RegionMsg::SendBatches`]: super::region::RegionMsg::SendBatches

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::BytesMut;
use serde::de::DeserializeOwned;
use serde::Serialize;
use volley::ActorRef;
use volley_remote::serialization::{BincodeSerializer, Serializer};

use super::allocation::ShardId;
use super::protocol::{RoutedMessage, ShardEnvelope};
use super::region_counters::RegionCounters;

/// Measures a message's encoding for a batch: its size in bytes, or
/// `None` if it must go alone. `scratch` is the caller's to reuse.
pub type SizeOf<M> = fn(&M, &mut BytesMut) -> Option<usize>;

/// [`SizeOf`] by the message's bincode encoding (the remote transport's
/// default serializer).
pub fn bincode_size<M: Serialize + DeserializeOwned>(
    msg: &M,
    scratch: &mut BytesMut,
) -> Option<usize> {
    scratch.clear();
    BincodeSerializer.encode(msg, scratch).ok()?;
    Some(scratch.len())
}

/// Bytes a batch counts per message besides the message itself: the
/// shard and the id's length prefix.
const ROUTING_BYTES: usize = 12;

/// The most of the measuring buffer kept between messages.
const SCRATCH_KEPT: usize = 64 * 1024;

struct Batch<M: Send + 'static> {
    to: ActorRef<ShardEnvelope<M>>,
    messages: Vec<RoutedMessage<M>>,
    bytes: usize,
}

/// A region's batches, one per destination with something to send.
pub(super) struct Outbox<M: Send + 'static> {
    size_of: Option<SizeOf<M>>,
    max_messages: usize,
    max_bytes: usize,
    batches: Vec<Batch<M>>,
    scratch: BytesMut,
    /// A `SendBatches` is on its way through the region's mailbox.
    send_asked: bool,
    /// Counts the messages sent in batches.
    counters: Arc<RegionCounters>,
}

impl<M: Send + 'static> Outbox<M> {
    /// An outbox that batches with `size_of` (none: every message goes
    /// alone) up to `max_messages` and `max_bytes` a batch, counting in
    /// `counters`.
    pub(super) fn new(
        size_of: Option<SizeOf<M>>,
        max_messages: usize,
        max_bytes: usize,
        counters: Arc<RegionCounters>,
    ) -> Self {
        Self {
            size_of: size_of.filter(|_| max_messages > 1),
            max_messages,
            max_bytes,
            batches: Vec::new(),
            scratch: BytesMut::new(),
            send_asked: false,
            counters,
        }
    }

    /// Sends, or keeps for its batch, entity `entity_id`'s `msg` for
    /// `to` (another region's `deliver` child). True when the region
    /// must send itself `SendBatches`: the message waits, and none is
    /// on its way.
    pub(super) fn push(
        &mut self,
        to: &ActorRef<ShardEnvelope<M>>,
        shard: ShardId,
        entity_id: Arc<str>,
        msg: M,
    ) -> bool {
        let size = self
            .size_of
            .and_then(|size_of| size_of(&msg, &mut self.scratch));
        if self.scratch.capacity() > SCRATCH_KEPT {
            self.scratch = BytesMut::new(); // a large message's, not kept
        }
        let size = size.map(|s| s + ROUTING_BYTES + entity_id.len());
        let Some(size) = size.filter(|s| *s <= self.max_bytes) else {
            self.send_to(to);
            to.tell(ShardEnvelope::Message {
                shard,
                entity_id,
                msg,
            });
            return false;
        };
        let at = match self.batches.iter().position(|b| b.to == *to) {
            Some(at) => at,
            None => {
                self.batches.push(Batch {
                    to: to.clone(),
                    messages: Vec::with_capacity(self.max_messages),
                    bytes: 0,
                });
                self.batches.len() - 1
            }
        };
        let batch = &mut self.batches[at];
        if batch.bytes + size > self.max_bytes {
            let full = Vec::with_capacity(self.max_messages);
            let sent = std::mem::replace(&mut batch.messages, full);
            send(sent, &batch.to, &self.counters);
            batch.bytes = 0;
        }
        batch.messages.push(RoutedMessage {
            shard,
            entity_id,
            msg,
        });
        batch.bytes += size;
        if batch.messages.len() >= self.max_messages {
            let batch = self.batches.swap_remove(at);
            send(batch.messages, &batch.to, &self.counters);
            return false;
        }
        !std::mem::replace(&mut self.send_asked, true)
    }

    /// Sends what waits for `to`: before anything else goes there.
    pub(super) fn send_to(&mut self, to: &ActorRef<ShardEnvelope<M>>) {
        if let Some(at) = self.batches.iter().position(|b| b.to == *to) {
            let batch = self.batches.swap_remove(at);
            send(batch.messages, &batch.to, &self.counters);
        }
    }

    /// Sends every batch (the region's `SendBatches`, and its stop).
    pub(super) fn send_all(&mut self) {
        self.send_asked = false;
        for batch in self.batches.drain(..) {
            send(batch.messages, &batch.to, &self.counters);
        }
    }
}

/// One message alone as `Message` (the form a node without batches
/// sends too), more as `Messages`.
fn send<M: Send + 'static>(
    mut messages: Vec<RoutedMessage<M>>,
    to: &ActorRef<ShardEnvelope<M>>,
    counters: &RegionCounters,
) {
    match messages.len() {
        0 => {}
        1 => {
            let RoutedMessage {
                shard,
                entity_id,
                msg,
            } = messages.pop().expect("one");
            to.tell(ShardEnvelope::Message {
                shard,
                entity_id,
                msg,
            });
        }
        n => {
            counters.batched.fetch_add(n as u64, Relaxed);
            to.tell(ShardEnvelope::Messages(messages));
        }
    }
}

#[cfg(test)]
#[path = "region_outbox_tests.rs"]
mod tests;
