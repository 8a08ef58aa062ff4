//! One outbound lane of an association: a coalescing buffer that senders
//! encode into under a short lock, and a writer task that swaps the buffer
//! out and writes it with one system call.
//!
//! This is the adaptive batching: while the writer is busy in `write`, new
//! messages pile up in the buffer, and the next write takes all of them. A
//! lone message goes out as soon as the writer is free, so light load keeps
//! its latency. The buffers are swapped, never reallocated, so the steady
//! state allocates nothing.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use spin::mutex::{SpinMutex, SpinMutexGuard};
use spin::relax::Yield;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use volley::remote::wire_refs::{is_temporary, ExportTable, TEMPORARY_IDS};
use volley::remote::{RemoteRef, RemoteSendError};
use volley::{AnyRef, DeadLetterReason};

use super::registry::OutboundType;
use super::Shared;
use crate::wire::{Address, EncodeError, Encoder, Lane, MessageHeader, Pdu, RefDeclaration, RefId};

pub(crate) struct OutboundLane {
    pub(crate) lane: Lane,
    pub(crate) remote: Address,
    encoder: Encoder,
    /// A spin lock, as for mailboxes: senders hold it for one encode, and
    /// its unlock is a plain store.
    state: SpinMutex<LaneState, Yield>,
    wake_writer: Notify,
    room: Notify,
    max_pending_bytes: usize,
    full: AtomicBool,
}

struct LaneState {
    buf: BytesMut,
    frames: usize,
    exports: RefCell<ExportTable>,
    /// Bumped whenever the export table is cleared, so ids cached in refs
    /// (`RemoteRef::id_hint`) from an older connection are not trusted.
    generation: u32,
}

/// A message too big for this lane: try the large one.
pub(crate) struct TooBigForLane(pub(crate) usize);

fn lock(m: &SpinMutex<LaneState, Yield>) -> SpinMutexGuard<'_, LaneState> {
    m.lock()
}

impl OutboundLane {
    pub(crate) fn new(
        lane: Lane,
        remote: Address,
        max_frame: u32,
        max_pending_bytes: usize,
    ) -> Self {
        OutboundLane {
            lane,
            remote,
            encoder: Encoder::new(max_frame),
            state: SpinMutex::new(LaneState {
                buf: BytesMut::with_capacity(64 * 1024),
                frames: 0,
                exports: RefCell::new(ExportTable::new()),
                generation: 1,
            }),
            wake_writer: Notify::new(),
            room: Notify::new(),
            max_pending_bytes,
            full: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    /// Resolves when the lane is below its limit again.
    pub(crate) async fn room(self: Arc<Self>) {
        let notified = self.room.notified();
        if !self.is_full() {
            return;
        }
        notified.await;
    }

    /// Encodes a user message for `target` into the buffer.
    pub(crate) fn send_user(
        &self,
        shared: &Shared,
        target: &RemoteRef,
        ty: OutboundType,
        msg: &(dyn Any + Send),
    ) -> Result<Result<(), TooBigForLane>, RemoteSendError> {
        let mut st = lock(&self.state);
        if st.buf.len() >= self.max_pending_bytes {
            self.full.store(true, Ordering::Relaxed);
            return Err(RemoteSendError::QueueFull(self.remote.to_string()));
        }
        let was_empty = st.buf.is_empty();
        let LaneState {
            buf,
            frames,
            exports,
            generation,
        } = &mut *st;
        // The recipient's id on this connection, cached in the ref: the
        // ordinary lane's hint is checked first, so the common case costs
        // one relaxed load instead of a table lookup with path comparison.
        let hint = target.id_hint.load(Ordering::Relaxed);
        let tag = ((*generation as u64) << 32) | self.lane as u64;
        let recipient = if hint >> 32 == tag >> 32 && hint & 0xff == tag & 0xff && hint != 0 {
            ((hint >> 8) & 0xff_ffff) as u32
        } else {
            let mut table = exports.borrow_mut();
            let id = match table.find(target.uid(), target.path()) {
                Some(id) => id,
                None => {
                    let any = target.any().ok_or_else(|| {
                        RemoteSendError::Unavailable("the remote ref is being dropped".into())
                    })?;
                    table.export(&any)
                }
            };
            // A temporary id is recycled: never cache it.
            if id > TEMPORARY_IDS && id < (1 << 24) {
                target
                    .id_hint
                    .store(tag | ((id as u64) << 8), Ordering::Relaxed);
            }
            id
        };
        *frames += write_declarations(shared, &self.encoder, exports, buf);
        let header = MessageHeader {
            recipient: RefId::new(recipient).expect("export ids start at 1"),
            sender: None,
            serializer: ty.serializer,
            type_id: ty.wire_id,
        };
        let msg_start = buf.len();
        let encoded = ExportTable::scope(exports, || {
            self.encoder
                .user_message_with(buf, &header, |b| (ty.encode)(msg, b))
        });
        let outcome = match encoded {
            Ok(()) => {
                *frames += 1;
                if exports.borrow().has_pending() {
                    // Refs inside the message were declared for the first
                    // time: their declarations must precede the message.
                    let message = buf.split_off(msg_start);
                    *frames += write_declarations(shared, &self.encoder, exports, buf);
                    buf.extend_from_slice(&message);
                }
                Ok(Ok(()))
            }
            Err(EncodeError::FrameTooLong { len, .. }) => {
                *frames += write_declarations(shared, &self.encoder, exports, buf);
                Ok(Err(TooBigForLane(len)))
            }
            Err(e) => {
                *frames += write_declarations(shared, &self.encoder, exports, buf);
                Err(RemoteSendError::Serialize(e.to_string()))
            }
        };
        drop(st);
        if was_empty {
            self.wake_writer.notify_one();
        }
        outcome
    }

    /// Queues a control PDU (spawn requests and responses).
    pub(crate) fn send_pdu(&self, pdu: &Pdu<'_>) -> Result<(), RemoteSendError> {
        let mut st = lock(&self.state);
        let was_empty = st.buf.is_empty();
        let LaneState { buf, frames, .. } = &mut *st;
        self.encoder
            .encode(pdu, buf)
            .map_err(|e| RemoteSendError::Serialize(e.to_string()))?;
        *frames += 1;
        drop(st);
        if was_empty {
            self.wake_writer.notify_one();
        }
        Ok(())
    }

    /// Takes the queued bytes, leaving `spare` (emptied) in their place.
    fn swap_out(&self, spare: &mut BytesMut) -> usize {
        let mut st = lock(&self.state);
        std::mem::swap(&mut st.buf, spare);
        let frames = std::mem::take(&mut st.frames);
        drop(st);
        if self.full.swap(false, Ordering::Relaxed) {
            self.room.notify_waiters();
        }
        frames
    }

    /// A new connection: the peer knows none of our declarations, and the
    /// frames queued for the old one refer to them, so both go.
    fn reset(&self, shared: &Shared) {
        let mut st = lock(&self.state);
        let dropped = std::mem::take(&mut st.frames);
        st.buf.clear();
        st.exports.borrow_mut().clear();
        st.generation = st.generation.wrapping_add(1).max(1);
        drop(st);
        self.full.store(false, Ordering::Relaxed);
        self.room.notify_waiters();
        if dropped > 0 {
            tracing::warn!(remote = %self.remote, lane = ?self.lane, dropped, "connection lost; queued frames dropped");
            for _ in 0..dropped {
                shared.count_dead_letter(&self.remote, DeadLetterReason::Undeliverable);
            }
        }
    }
}

/// Writes the declarations the export table queued; returns how many.
fn write_declarations(
    shared: &Shared,
    encoder: &Encoder,
    exports: &RefCell<ExportTable>,
    buf: &mut BytesMut,
) -> usize {
    let pending = {
        let mut table = exports.borrow_mut();
        if !table.has_pending() {
            return 0;
        }
        table.take_pending()
    };
    let n = pending.len();
    for (id, actor) in pending {
        let path = shared.export_path(&actor);
        let declaration = RefDeclaration {
            id: RefId::new(id).expect("export ids start at 1"),
            uid: actor.uid(),
            path: &path,
        };
        if let Err(e) = encoder.encode(&Pdu::RefDeclaration(declaration), buf) {
            tracing::error!(%path, "cannot declare ref: {e}");
        }
    }
    n
}

/// A local temporary ref (an ask's reply handle) must be registered so that
/// replies can find it; other local refs are found by path.
pub(crate) fn is_local_temporary(actor: &AnyRef) -> bool {
    actor.as_remote().is_none() && is_temporary(actor)
}

/// The writer task of one lane: connect, then drain the buffer forever;
/// reconnect after a failure.
pub(crate) async fn run_writer(lane: Arc<OutboundLane>, shared: Arc<Shared>) {
    let mut spare = BytesMut::with_capacity(64 * 1024);
    let batching = shared.settings.batching.clone();
    let backoff = Duration::from_millis(shared.settings.reconnect_backoff_ms.max(1));
    loop {
        if shared.is_shut_down() {
            return;
        }
        let connected = tokio::time::timeout(
            shared.settings.handshake_timeout(),
            super::handshake::connect(
                &lane.remote,
                lane.lane,
                &shared.address,
                shared.uid,
                shared.settings.auth_token.as_deref().map(str::as_bytes),
            ),
        )
        .await;
        let mut stream: TcpStream = match connected {
            Ok(Ok((stream, accepted))) => {
                tracing::debug!(remote = %lane.remote, lane = ?lane.lane, peer_uid = accepted.peer_uid, "connected");
                stream
            }
            Ok(Err(e)) => {
                tracing::warn!(remote = %lane.remote, lane = ?lane.lane, "cannot connect: {e}");
                lane.reset(&shared);
                tokio::time::sleep(backoff).await;
                continue;
            }
            Err(_) => {
                tracing::warn!(remote = %lane.remote, lane = ?lane.lane, "handshake timed out");
                lane.reset(&shared);
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        loop {
            let frames = lane.swap_out(&mut spare);
            if frames == 0 && spare.is_empty() {
                lane.wake_writer.notified().await;
                if batching.flush_interval_us > 0 {
                    tokio::time::sleep(Duration::from_micros(batching.flush_interval_us)).await;
                }
                continue;
            }
            let written = if batching.enabled {
                write_batched(&mut stream, &spare, batching.max_pending_writes).await
            } else {
                write_batched(&mut stream, &spare, 1).await
            };
            spare.clear();
            if let Err(e) = written {
                tracing::warn!(remote = %lane.remote, lane = ?lane.lane, "write failed: {e}; reconnecting");
                lane.reset(&shared);
                break;
            }
        }
    }
}

/// Writes `bytes` (whole frames) in system calls of at most `max_frames`
/// frames each.
async fn write_batched(
    stream: &mut TcpStream,
    bytes: &[u8],
    max_frames: usize,
) -> std::io::Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut end = 0;
        let mut frames = 0;
        while end < rest.len() && frames < max_frames {
            let len = u32::from_le_bytes(rest[end..end + 4].try_into().expect("4 bytes")) as usize;
            end += 4 + len;
            frames += 1;
        }
        stream.write_all(&rest[..end]).await?;
        rest = &rest[end..];
    }
    Ok(())
}
