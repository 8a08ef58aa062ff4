//! Flushing the user lanes to a node before a death notice goes to it, as
//! Akka Artery's `FlushBeforeDeathWatchNotification`.
//!
//! A death notice travels on the control lane, the messages the dead actor
//! sent on the ordinary and large lanes: three connections, read by three
//! tasks at the other end. Without care a watcher could get `Terminated`
//! before the last messages the actor sent it, which Akka orders (its
//! `Terminated` is queued behind what is already in the watcher's mailbox,
//! and so is volley's). So before the notice leaves, each user lane to that
//! node that has a connection or queued bytes gets a Flush frame behind
//! what it already holds; the peer reads it after delivering everything
//! before it on that connection, into the recipients' mailboxes, and
//! answers with a FlushAck on its control lane. Once every lane flushed
//! has answered, or after `death_watch_notification_flush_timeout`
//! (a lost connection loses its Flush too), the notice is sent.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::sync::Ordering;
use crate::transport::control::ControlContext;
use crate::transport::outbound::association::Association;
use crate::transport::outbound::lane::OutboundLane;
use crate::transport::support::{lock, FastMap};
use crate::wire::{Address, Flush, FlushAck, Lane, Pdu};

/// Flushes waiting for their acks.
#[derive(Default)]
pub(crate) struct Flushes {
    last_id: AtomicU64,
    waiting: Mutex<FastMap<u64, Waiting>>,
}

struct Waiting {
    node: Address,
    acks_left: usize,
    then: Box<dyn FnOnce() + Send>,
}

/// Flushing the user lanes, for any node with a control context.
pub(crate) trait UserLaneFlushes: ControlContext {
    /// Runs `then` once what `association`'s user lanes hold now has been
    /// delivered at the peer, or at the flush timeout; at once when there is
    /// nothing to flush (no user lane in use, the node is gone, the
    /// association is stopped) or the timeout is 0.
    fn after_user_lanes_flushed(
        self: &Arc<Self>,
        association: &Association,
        then: impl FnOnce() + Send + 'static,
    ) {
        let timeout = self.settings().death_watch_notification_flush_timeout;
        let lanes: Vec<_> = [Lane::Ordinary, Lane::Large]
            .into_iter()
            .map(|lane| association.lane(lane))
            .filter(|lane| lane.is_connected() || lane.has_queued())
            .collect();
        if timeout.is_zero()
            || lanes.is_empty()
            || association.is_down()
            || association.is_retired()
        {
            return then();
        }
        let id = self.flush_lanes(association, &lanes, Box::new(then));
        let me = self.clone();
        self.track(self.system().runtime_handle().spawn(async move {
            tokio::time::sleep(timeout).await;
            let timed_out = lock(&me.flushes().waiting).remove(&id);
            if let Some(waiting) = timed_out {
                tracing::debug!(remote = %waiting.node, acks_left = waiting.acks_left, "flush before a death notice timed out");
                (waiting.then)();
            }
        }));
    }

    /// Sends a Flush behind what each of `lanes` (all `association`'s)
    /// holds; `then` runs once the peer has answered all of them, having
    /// read everything before them on those connections. Returns the
    /// flush's id. A lane that cannot take the Flush counts as answered.
    fn flush_lanes(
        &self,
        association: &Association,
        lanes: &[&Arc<OutboundLane>],
        then: Box<dyn FnOnce() + Send>,
    ) -> u64 {
        let id = self.flushes().last_id.fetch_add(1, Ordering::Relaxed) + 1;
        lock(&self.flushes().waiting).insert(
            id,
            Waiting {
                node: association.remote.clone(),
                acks_left: lanes.len(),
                then,
            },
        );
        for lane in lanes {
            if let Err(e) = lane.send_pdu(self, &Pdu::Flush(Flush { id })) {
                tracing::debug!(remote = %association.remote, "flush not queued: {e}");
                self.flush_acked(&association.remote, id);
            }
        }
        id
    }

    /// A FlushAck from `from`: the flush `id` is done once each of its
    /// lanes has answered. An ack for a flush this node did not send to
    /// `from` is ignored.
    fn flush_acked(&self, from: &Address, id: u64) {
        let done = {
            let mut waiting = lock(&self.flushes().waiting);
            let Some(entry) = waiting.get_mut(&id).filter(|w| &w.node == from) else {
                return;
            };
            entry.acks_left -= 1;
            if entry.acks_left > 0 {
                return;
            }
            waiting.remove(&id)
        };
        if let Some(waiting) = done {
            (waiting.then)();
        }
    }

    /// A Flush from `peer`, read after everything before it on its
    /// connection was delivered: answered on this node's control lane.
    fn answer_flush(&self, peer: &Address, id: u64) {
        let Some(association) = self.associations().find(peer) else {
            return;
        };
        if let Err(e) = association
            .lane(Lane::Control)
            .send_pdu(self, &Pdu::FlushAck(FlushAck { id }))
        {
            tracing::debug!(%peer, "flush not answered: {e}");
        }
    }
}

impl<C: ControlContext> UserLaneFlushes for C {}
