//! One outbound lane of an association: a coalescing buffer that senders
//! encode into under a short lock, swapped out whole by whoever writes it to
//! the socket (see `outbound/writer.rs`: a dispatcher thread at the end of its batch,
//! or the lane's writer task).
//!
//! This is the adaptive batching: while a write is in progress, new
//! messages pile up in the buffer, and the next write takes all of them. A
//! lone message goes out as soon as the connection is free, so light load
//! keeps its latency. The buffers are swapped, never reallocated, so the
//! steady state allocates nothing.
//!
//! Who may write, and how appended bytes always reach a writer, is the write
//! token protocol in `outbound/lane/token.rs`; `outbound/lane/loom_model.rs` model-checks it.

use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

use bytes::BytesMut;
use tokio::sync::Notify;
use volley::remote::{RemoteRef, RemoteSendError};
use volley::{AnyRef, DeadLetterReason};

use crate::sync::{self, AtomicBool, Ordering, SpinLock, SpinLockGuard};
use crate::transport::outbound::association::system_buffers::{Pending, SYSTEM_SERIALIZER};
use crate::transport::outbound::association::{Association, AssociationId};
use crate::transport::outbound::route::{CacheTag, RecipientCache};
use crate::transport::outbound::writer::Connection;
use crate::transport::outbound::OutboundContext;
use crate::transport::refs::tables::ExportTable;
use crate::transport::registry::OutboundType;
use crate::wire::{Address, Encoder, Lane, MessageHeader, Pdu, PduKind, RefId, DEFAULT_MAX_REF_ID};

mod declarations;
mod framing;
pub(crate) mod gone_refs;
mod idleness;
mod peer_features;
mod token;

use declarations::{
    begin_message, encode_declaration, encode_with_refs, end_message, recipient_id,
    write_declarations,
};

#[cfg(all(test, feature = "loom-model"))]
mod loom_model;

pub(crate) use framing::{Framing, Plain, WithContext};
pub(crate) use token::LaneConnection;

/// Generic over the connection only for the loom models: the transport
/// always uses the default.
pub(crate) struct OutboundLane<C = Connection> {
    pub(crate) lane: Lane,
    pub(crate) remote: Address,
    encoder: Encoder,
    /// A spin lock, as for mailboxes: senders hold it for one encode, and
    /// its unlock is a plain store.
    state: SpinLock<LaneState<C>>,
    pub(crate) wake_writer: sync::Notify,
    room: Notify,
    /// Asks the writer task to drop the connection (the node is gone): it
    /// may be parked, or waiting for a socket that never drains.
    pub(crate) reset: Notify,
    /// Counts the resets asked, so a writer can tell a reset meant for its
    /// connection from one left over from before it connected.
    reset_epoch: std::sync::atomic::AtomicU64,
    /// Asks the writer task to end its reconnect pause: the node has a
    /// new incarnation (`outbound/backoff.rs`).
    pub(crate) redial: crate::transport::outbound::backoff::Redial,
    max_pending_bytes: usize,
    /// What `send_user` admits: `max_pending_bytes`, or 0 while the node
    /// is gone, so that refusing costs the send path nothing it did not
    /// already do (it compares against the limit anyway).
    limit: std::sync::atomic::AtomicUsize,
    /// The node is gone: a refusal is `Unavailable`, not `QueueFull`.
    gone: std::sync::atomic::AtomicBool,
    /// The association was stopped for idleness (`idle/`): a send
    /// starts it again. Changed under the state lock, with `limit`.
    retired: std::sync::atomic::AtomicBool,
    full: AtomicBool,
    /// A dispatcher thread has a flush of this lane pending at the end of
    /// its batch: later senders need not ask again.
    pub(crate) flush_queued: AtomicBool,
    /// The lane has a connection (handshake completed, not yet failed).
    connected: std::sync::atomic::AtomicBool,
    /// The last connect attempt, or the last connection, failed.
    failing: std::sync::atomic::AtomicBool,
    /// Frames per `write` system call (1 without batching).
    pub(crate) max_frames_per_write: usize,
    /// Dispatcher threads write themselves (off when a flush interval asks
    /// the writer task to wait before each write).
    direct_flush: bool,
    /// Most bytes queued before a control PDU or system message is refused
    /// (`limits.max_control_queue_bytes`), and whether one was.
    pdu_limit: usize,
    overflowed: std::sync::atomic::AtomicBool,
    /// Frames refused for `pdu_limit`, ever: a node quarantined at the
    /// first refusal counts one, a cluster member whose authority is still
    /// deciding may count many.
    refused_frames: std::sync::atomic::AtomicU64,
    /// The association this lane belongs to (`None` for a lane of its
    /// own, in tests): its id names the node a reply to an ask declared
    /// here must come from.
    pub(crate) association_id: Option<AssociationId>,
    association: Weak<Association>,
    /// While the system's metrics are on: what each batch is recorded
    /// into (`metrics.rs`).
    meter: Option<crate::transport::metrics::LaneMeter>,
    /// Frames taken by writers, counted per buffer while metered, after
    /// the lock (one writer at a time adds).
    frames_out: std::sync::atomic::AtomicU64,
}

struct LaneState<C> {
    buf: BytesMut,
    /// Kept across reconnects: the queued frames use its ids, and a new
    /// connection starts by declaring them again (`redeclare`).
    exports: RefCell<ExportTable>,
    /// The lane and the generation of the export table's numbering, bumped
    /// whenever the table is cleared, so ids cached in routes
    /// (`RouteHint::recipient`) under the old numbering are not trusted.
    generation: CacheTag,
    /// The peer advertised, in the last handshake, that it decodes Request
    /// frames: only then does an ask's reply handle travel inline
    /// (`peer_features.rs`). False until a handshake says so.
    peer_takes_requests: bool,
    /// Counts what shows the lane in use, for idleness (`idle/`): the
    /// buffers taken by a writer on the user lanes (not each message, so
    /// the send path pays nothing), and on the control lane each PDU but
    /// heartbeats.
    activity: u64,
    /// Bytes taken by writers, and connections made: for the metrics
    /// (`metrics.rs`), counted per buffer and per connection, never per
    /// message.
    bytes_out: u64,
    connects: u64,
    /// The connection while nobody writes to it. Whoever takes it is the
    /// only writer until it is put back; `None` while somebody writes or
    /// while the writer task (re)connects.
    idle: Option<C>,
    /// A connection a dispatcher thread could not finish (socket full) or
    /// whose write failed: the writer task carries on with it.
    handoff: Option<C>,
}

/// Why a lane did not take a user message.
pub(crate) enum LaneRefusal {
    /// The encoded message (this many bytes) does not fit this lane's
    /// frames: the large lane may take it.
    TooBig(usize),
    /// It cannot be sent on any lane (boxed: the refusal is returned by
    /// every send, and is rarely an error).
    Failed(Box<RemoteSendError>),
    /// The association is stopped for idleness: start it and send again.
    Retired,
}

/// Why a lane did not take a datagram (`send_datagram`).
#[derive(Debug)]
pub(crate) enum DatagramRefusal {
    /// The queue would hold more than the budget; this many bytes wait.
    OverBudget { queued: usize },
    /// The frame cannot be encoded (too long for the lane, say).
    Encode(crate::wire::EncodeError),
}

impl From<RemoteSendError> for LaneRefusal {
    fn from(e: RemoteSendError) -> Self {
        LaneRefusal::Failed(Box::new(e))
    }
}

impl<C: LaneConnection> OutboundLane<C> {
    pub(crate) fn new(
        lane: Lane,
        remote: Address,
        max_frame: u32,
        batching: &crate::transport::BatchingSettings,
        association: Option<(AssociationId, Weak<Association>)>,
    ) -> Self {
        let (association_id, association) = association.unzip();
        OutboundLane {
            lane,
            remote,
            encoder: Encoder::new(max_frame),
            state: SpinLock::new(LaneState {
                buf: BytesMut::with_capacity(64 * 1024),
                exports: RefCell::new(ExportTable::new()),
                generation: CacheTag::first(lane),
                peer_takes_requests: false,
                activity: 0,
                bytes_out: 0,
                connects: 0,
                idle: None,
                handoff: None,
            }),
            wake_writer: sync::Notify::new(),
            room: Notify::new(),
            reset: Notify::new(),
            reset_epoch: std::sync::atomic::AtomicU64::new(0),
            redial: Default::default(),
            max_pending_bytes: batching.max_pending_bytes,
            limit: std::sync::atomic::AtomicUsize::new(batching.max_pending_bytes),
            gone: std::sync::atomic::AtomicBool::new(false),
            retired: std::sync::atomic::AtomicBool::new(false),
            full: AtomicBool::new(false),
            flush_queued: AtomicBool::new(false),
            connected: std::sync::atomic::AtomicBool::new(false),
            failing: std::sync::atomic::AtomicBool::new(false),
            max_frames_per_write: batching.max_pending_writes,
            direct_flush: batching.batches()
                && batching.flush_interval.is_zero()
                && batching.dispatcher_writes,
            pdu_limit: usize::MAX,
            overflowed: std::sync::atomic::AtomicBool::new(false),
            refused_frames: std::sync::atomic::AtomicU64::new(0),
            association_id,
            association: association.unwrap_or_default(),
            meter: None,
            frames_out: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Records each batch a writer takes into `meter`, if any.
    pub(crate) fn with_meter(
        mut self,
        meter: Option<crate::transport::metrics::LaneMeter>,
    ) -> Self {
        self.meter = meter;
        self
    }

    /// Applies `[remote.limits]`: the export table's cap, and on the
    /// control lane the bound of its queue.
    pub(crate) fn with_limits(mut self, limits: &crate::transport::LimitSettings) -> Self {
        self.state.lock().exports = RefCell::new(ExportTable::with_max(limits.max_exported_refs));
        if self.lane == Lane::Control {
            self.pdu_limit = limits.max_control_queue_bytes;
        }
        self
    }

    /// True once if a PDU was refused for the queue's bound since the last
    /// call: the caller, holding no lock, quarantines the peer.
    pub(crate) fn take_overflow(&self) -> bool {
        self.overflowed.load(std::sync::atomic::Ordering::Relaxed)
            && self
                .overflowed
                .swap(false, std::sync::atomic::Ordering::Relaxed)
    }

    /// How many frames this lane refused for its bound
    /// (`limits.max_control_queue_bytes`) so far.
    pub(crate) fn refused_frames(&self) -> u64 {
        self.refused_frames
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    /// True while bytes wait to be written: the lane has no connection, or
    /// its writer has not taken them yet.
    pub(crate) fn has_queued(&self) -> bool {
        !self.state.lock().buf.is_empty()
    }

    /// Resolves when the lane is below its limit again.
    pub(crate) async fn room(self: Arc<Self>) {
        let notified = self.room.notified();
        if !self.is_full() {
            return;
        }
        notified.await;
    }

    /// Encodes a user message for `target` into the buffer (a reply to an
    /// ask made on the peer as a Reply frame, which carries no trace
    /// context). Inlined into the route's send: one call frame less per
    /// remote message (its entry and exit, and the seven arguments moved
    /// into place, cost about as much as the lock).
    #[inline(always)]
    pub(crate) fn send_user<F: Framing>(
        self: &Arc<Self>,
        core: &(impl OutboundContext + ?Sized),
        target: &RemoteRef,
        recipient_cache: &RecipientCache,
        ty: &OutboundType,
        msg: &(dyn Any + Send),
        framing: F,
    ) -> Result<(), LaneRefusal> {
        let mut st = self.state.lock();
        if st.buf.len() >= self.limit.load(std::sync::atomic::Ordering::Relaxed) {
            // `full` is set under the lock: a writer that takes the buffer
            // after it clears the flag and wakes the waiters; set after
            // unlocking, it could outlive the drain and strand them.
            return Err(self.refuse());
        }
        let was_empty = st.buf.is_empty();
        let LaneState {
            buf,
            exports,
            generation,
            peer_takes_requests,
            ..
        } = &mut *st;
        let inline_reply_handle = F::INLINE_REPLY_HANDLE && *peer_takes_requests;
        if let Some(correlation) = target.correlation() {
            return self.send_reply(st, core, correlation, ty, msg);
        }
        // The recipient's id on this connection, cached in the route: the
        // common case costs one relaxed load instead of a table lookup with
        // path comparison. Nothing else leaves declarations pending between
        // two sends (each message's own are written by `end_message`), so
        // only a new recipient has any to write before the frame.
        debug_assert!(
            !exports.get_mut().has_pending(),
            "declarations left pending by an earlier send"
        );
        let recipient = match recipient_cache.get(*generation) {
            Some(id) => id,
            None => {
                let id = recipient_id(exports, target, recipient_cache, *generation)?;
                write_declarations(core, &self.encoder, self.association_id, exports, buf);
                id
            }
        };
        let header = MessageHeader {
            recipient: RefId::new(recipient).expect("export ids start at 1"),
            sender: None,
            serializer: ty.serializer,
            type_id: ty.wire_id,
        };
        // Written out rather than through `encode_with_refs`: the frame's
        // header writes stay in this function instead of a closure that
        // the compiler keeps out of line.
        let msg_start = begin_message(exports, buf, inline_reply_handle);
        let table = &*exports;
        let encoded = framing.frame(&self.encoder, buf, &header, |b| {
            (ty.encode)(msg, b, table).map_err(|e| *e)
        });
        let outcome = end_message(
            core,
            &self.encoder,
            self.association_id,
            exports,
            buf,
            (msg_start, inline_reply_handle),
            encoded,
        );
        self.unlock_and_kick(st, was_empty, true);
        outcome
    }

    /// A reply to an ask made on the peer: addressed by the peer's own id
    /// for the handle, nothing to declare. Out of line, so the plain send
    /// that inlines [`OutboundLane::send_user`] stays small. Called
    /// with the lock held and the limit checked.
    #[inline(never)]
    fn send_reply(
        self: &Arc<Self>,
        mut st: SpinLockGuard<'_, LaneState<C>>,
        core: &(impl OutboundContext + ?Sized),
        correlation: u64,
        ty: &OutboundType,
        msg: &(dyn Any + Send),
    ) -> Result<(), LaneRefusal> {
        let was_empty = st.buf.is_empty();
        let LaneState { buf, exports, .. } = &mut *st;
        let outcome = encode_with_refs(
            core,
            &self.encoder,
            self.association_id,
            exports,
            buf,
            false,
            |buf, exports| {
                self.encoder
                    .reply_with(buf, correlation, ty.serializer, ty.wire_id, |b| {
                        (ty.encode)(msg, b, exports).map_err(|e| *e)
                    })
            },
        );
        self.unlock_and_kick(st, was_empty, true);
        outcome
    }

    /// Queues a control PDU; a stopped association starts again.
    pub(crate) fn send_pdu(
        self: &Arc<Self>,
        core: &(impl OutboundContext + ?Sized),
        pdu: &Pdu<'_>,
    ) -> Result<(), RemoteSendError> {
        let mut st = self.state.lock();
        if self.is_retired() {
            drop(st);
            if let Some(association) = self.association() {
                core.revive(&association);
            }
            st = self.state.lock();
        }
        st.activity += 1;
        if st.buf.len() >= self.pdu_limit {
            drop(st);
            return Err(self.overflow());
        }
        let was_empty = st.buf.is_empty();
        self.encoder
            .encode(pdu, &mut st.buf)
            .map_err(|e| RemoteSendError::Serialize(e.to_string()))?;
        self.unlock_and_kick(st, was_empty, false);
        Ok(())
    }

    /// Queues a control PDU with datagram semantics: only if the queue
    /// then holds at most `budget` bytes (kept below the control queue's
    /// own bound by the caller), so a frame that may be lost is dropped
    /// rather than queued, and never makes the queue overflow (which
    /// quarantines). On a refusal, hands back the bytes already queued.
    pub(crate) fn send_datagram(
        self: &Arc<Self>,
        pdu: &Pdu<'_>,
        budget: usize,
    ) -> Result<(), DatagramRefusal> {
        let mut st = self.state.lock();
        let queued = st.buf.len();
        let was_empty = queued == 0;
        self.encoder
            .encode(pdu, &mut st.buf)
            .map_err(DatagramRefusal::Encode)?;
        if st.buf.len() > budget.min(self.pdu_limit) {
            st.buf.truncate(queued);
            return Err(DatagramRefusal::OverBudget { queued });
        }
        st.activity += 1;
        self.unlock_and_kick(st, was_empty, false);
        Ok(())
    }

    /// Queues a heartbeat; false, queueing nothing, while the association
    /// is stopped (heartbeats are not traffic that starts it again).
    pub(crate) fn send_heartbeat(self: &Arc<Self>) -> Result<bool, RemoteSendError> {
        self.send_liveness(&Pdu::Heartbeat, false)
    }

    /// Queues the answer to a peer's heartbeat, only if this lane is
    /// already in use and idle: never on a stopped association (an ack is
    /// not traffic that starts it), never behind queued frames (a late ack
    /// would measure the queue), never without a connection (it must not
    /// make the writer dial). False when it queued nothing.
    pub(crate) fn send_heartbeat_ack(self: &Arc<Self>) -> Result<bool, RemoteSendError> {
        self.send_liveness(&Pdu::HeartbeatAck, true)
    }

    fn send_liveness(
        self: &Arc<Self>,
        pdu: &Pdu<'_>,
        only_if_idle: bool,
    ) -> Result<bool, RemoteSendError> {
        let mut st = self.state.lock();
        let connected = || self.connected.load(std::sync::atomic::Ordering::Relaxed);
        if self.is_retired() || (only_if_idle && (!st.buf.is_empty() || !connected())) {
            return Ok(false);
        }
        if st.buf.len() >= self.pdu_limit {
            drop(st);
            return Err(self.overflow());
        }
        let was_empty = st.buf.is_empty();
        self.encoder
            .encode(pdu, &mut st.buf)
            .map_err(|e| RemoteSendError::Serialize(e.to_string()))?;
        self.unlock_and_kick(st, was_empty, false);
        Ok(true)
    }

    /// A control PDU met the queue's bound: refused, and the caller told
    /// to quarantine (`take_overflow`).
    #[cold]
    fn overflow(&self) -> RemoteSendError {
        self.overflowed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.refused_frames
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        RemoteSendError::QueueFull(format!(
            "{} (control lane over limits.max_control_queue_bytes = {})",
            self.remote, self.pdu_limit
        ))
    }

    /// Why a user message is not taken: the queue is full, the node is
    /// gone, or the association is stopped (the caller starts it). Called
    /// under the state lock, which the flags change under.
    #[cold]
    fn refuse(&self) -> LaneRefusal {
        if self.gone.load(std::sync::atomic::Ordering::Relaxed) {
            return RemoteSendError::Unavailable(format!(
                "{} is gone (unreachable, quarantined or shut down)",
                self.remote
            ))
            .into();
        }
        if self.is_retired() {
            return LaneRefusal::Retired;
        }
        self.full.store(true, Ordering::Relaxed);
        RemoteSendError::QueueFull(self.remote.to_string()).into()
    }

    /// Marks the node gone (user messages are refused at once) or back.
    pub(crate) fn set_gone(&self, gone: bool) {
        let _st = self.state.lock();
        self.gone.store(gone, std::sync::atomic::Ordering::Relaxed);
        self.update_limit();
    }

    /// What `send_user` admits: nothing while the node is gone or the
    /// association stopped. Called under the state lock.
    fn update_limit(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let closed = self.gone.load(Relaxed) || self.retired.load(Relaxed);
        let limit = if closed { 0 } else { self.max_pending_bytes };
        self.limit.store(limit, Relaxed);
    }

    /// True while the association is stopped for idleness.
    #[inline]
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Encodes a system message into the queue, or into `out` (the start
    /// of a new connection, for a resend), declaring its refs as needed.
    pub(crate) fn send_system(
        self: &Arc<Self>,
        core: &(impl OutboundContext + ?Sized),
        pending: &Pending,
        ack: u64,
        out: Option<&mut BytesMut>,
    ) {
        let mut st = self.state.lock();
        if out.is_none() && self.is_retired() {
            drop(st);
            if let Some(association) = self.association() {
                core.revive(&association);
            }
            st = self.state.lock();
        }
        st.activity += 1;
        if out.is_none() && st.buf.len() >= self.pdu_limit {
            // Not lost: it stays unacknowledged, and the peer is quarantined.
            drop(st);
            self.overflow();
            return;
        }
        let was_empty = st.buf.is_empty();
        let LaneState { buf, exports, .. } = &mut *st;
        let resending = out.is_some();
        let buf = match out {
            Some(out) => out,
            None => buf,
        };
        // A resend goes into `out`, ahead of the queue: a ref declared
        // since the new connection's re-declarations were taken has its
        // declaration in the queue, behind this message, so it is declared
        // again here, before it (a re-declaration changes nothing).
        let mut id_of = |actor: &AnyRef| {
            let mut table = exports.borrow_mut();
            let id = match table.find(actor.uid(), actor.path()) {
                Some(id) if resending => table.declare_again(id, actor),
                Some(id) => id,
                None => table.export(actor),
            };
            RefId::new(id).expect("export ids start at 1")
        };
        let header = MessageHeader {
            recipient: id_of(&pending.recipient),
            sender: pending.sender.as_ref().map(&mut id_of),
            serializer: crate::serialization::SerializerId(SYSTEM_SERIALIZER),
            type_id: pending.kind as u32,
        };
        write_declarations(core, &self.encoder, self.association_id, exports, buf);
        if let Err(e) = self
            .encoder
            .system_message_with(buf, pending.seq, ack, &header, |b| {
                b.extend_from_slice(&pending.payload);
                Ok(())
            })
        {
            tracing::error!(remote = %self.remote, "cannot encode a system message: {e}");
        }
        self.unlock_and_kick(st, was_empty, false);
    }

    /// Drops everything queued (the node is gone): each message a counted
    /// dead letter, and senders waiting for room are woken; returns how
    /// many messages were dropped.
    pub(crate) fn discard_queued(&self, core: &(impl OutboundContext + ?Sized)) -> usize {
        let dropped = {
            let mut st = self.state.lock();
            let dropped = crate::transport::outbound::writer::messages_from(&st.buf, 0);
            st.buf.clear();
            st.exports.get_mut().note_load();
            dropped
        };
        if self.full.swap(false, Ordering::Relaxed) {
            self.room.notify_waiters();
        }
        for _ in 0..dropped {
            core.count_dead_letter(&self.remote, DeadLetterReason::Undeliverable);
        }
        dropped
    }

    /// Drops the queued frames of the given kinds, keeping the rest in
    /// order (a rare event: the peer restarted).
    pub(crate) fn discard_queued_kinds(
        &self,
        core: &(impl OutboundContext + ?Sized),
        kinds: &[PduKind],
    ) {
        let mut st = self.state.lock();
        let (kept, dropped) = crate::transport::outbound::writer::without_kinds(&st.buf, kinds);
        st.buf.clear();
        st.buf.extend_from_slice(&kept);
        drop(st);
        for _ in 0..dropped {
            core.count_dead_letter(&self.remote, DeadLetterReason::Undeliverable);
        }
    }

    /// Notes that the lane has a connection, or lost it.
    pub(crate) fn set_connected(&self, connected: bool) {
        if connected {
            self.state.lock().connects += 1;
        }
        self.connected
            .store(connected, std::sync::atomic::Ordering::Relaxed);
    }

    /// True while the lane has a connection.
    pub(crate) fn is_connected(&self) -> bool {
        self.connected.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Asks the writer task to drop the current connection.
    pub(crate) fn drop_connection(&self) {
        self.reset_epoch
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.reset.notify_one();
    }

    /// How many resets were asked so far.
    pub(crate) fn reset_epoch(&self) -> u64 {
        self.reset_epoch.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Starts a new connection: writes into `out`, to go before anything
    /// queued, a declaration of every lasting ref the export table holds.
    /// The peer of a new connection knows none of them, and the queued
    /// frames (or the routes' cached recipient ids) may use any of them.
    /// Temporary ids need no such care: a reply handle gets a new id, with
    /// its declaration right before the frame, each time it is sent, so a
    /// queued frame's temporary ids are declared in the queue itself.
    ///
    /// A table that has outgrown the ids a peer accepts is cleared instead,
    /// with the frames queued under its numbering (counted as dead letters).
    pub(crate) fn redeclare(&self, core: &(impl OutboundContext + ?Sized), out: &mut BytesMut) {
        let mut st = self.state.lock();
        let outgrown = st.exports.borrow().highest_id() > DEFAULT_MAX_REF_ID;
        if outgrown {
            let dropped = crate::transport::outbound::writer::messages_from(&st.buf, 0);
            st.buf.clear();
            st.exports.borrow_mut().clear();
            st.generation = st.generation.next();
            drop(st);
            if self.full.swap(false, Ordering::Relaxed) {
                self.room.notify_waiters();
            }
            tracing::warn!(remote = %self.remote, lane = ?self.lane, dropped, "ref ids exhausted; numbering afresh and dropping the queued messages");
            for _ in 0..dropped {
                core.count_dead_letter(&self.remote, DeadLetterReason::Undeliverable);
            }
            return;
        }
        // Taken under the lock, encoded after it: senders wait for the
        // copy, not for a path to be formatted per ref. A ref exported
        // meanwhile has its declaration in the queue, which follows `out`.
        let lasting: Vec<(u32, AnyRef)> = st
            .exports
            .borrow()
            .lasting()
            .map(|(id, actor)| (id, actor.clone()))
            .collect();
        drop(st);
        for (id, actor) in &lasting {
            encode_declaration(core, &self.encoder, self.association_id, *id, actor, out);
        }
    }
}
