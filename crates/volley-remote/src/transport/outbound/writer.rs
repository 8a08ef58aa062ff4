//! Who writes a lane's buffer to its socket.
//!
//! The connection itself is the write token: it sits in the lane (idle)
//! while nobody writes, and whoever takes it out is the only writer until it
//! is put back. Two kinds of writers take it:
//!
//! - a dispatcher thread, at the end of its batch of activations
//!   ([`volley::batch_end`]): it writes with non-blocking `try_write`, so the
//!   messages its actors sent leave without waking any other thread;
//! - the lane's writer task on the I/O runtime: it connects and reconnects,
//!   serves senders that are not dispatcher threads, and finishes a write a
//!   dispatcher thread could not (socket buffer full), awaiting writability.
//!
//! Because taking the token, appending and putting it back all happen under
//! the lane's lock, a message appended while somebody writes is always seen
//! by that writer before it lets go of the token: nothing is stranded.
//!
//! A failed connection loses only what it had taken: the frames not yet
//! completely written, counted as dead letters (one cut on the wire cannot
//! be finished on another connection, and one not started may depend on a
//! reply-handle declaration that was). What is still queued in the lane
//! waits for the next connection, which begins by declaring the lane's refs
//! again (`OutboundLane::redeclare`), so the queued frames' ids mean the
//! same there. While the peer is away the queue is bounded by
//! `max_pending_bytes`, like any queue the socket does not take.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::net::TcpStream;
use volley::batch_end::BatchEnd;
use volley::DeadLetterReason;

use crate::sync::Ordering;
use crate::transport::events::{DisassociationReason, RemotingEvent};
use crate::transport::handshake::setup::{Accepted, HandshakeError};
use crate::transport::incarnation::Incarnation;
use crate::transport::outbound::association::Refusal;
use crate::transport::outbound::backoff::Backoff;
use crate::transport::outbound::lane::{LaneConnection, OutboundLane};
use crate::transport::outbound::OutboundContext;
use crate::wire::{Disassociate, DisassociateReason, Encoder, HandshakeStatus, Lane, Pdu, PduKind};

/// How many refills a dispatcher thread writes before leaving the rest to
/// the writer task, so a flush cannot keep a dispatcher thread forever.
const FLUSH_ROUNDS: usize = 4;

/// The end of at most `max_frames` whole frames starting at `start`.
pub(in crate::transport) fn chunk_end(bytes: &[u8], start: usize, max_frames: usize) -> usize {
    let mut end = start;
    let mut frames = 0;
    while end + 4 <= bytes.len() && frames < max_frames {
        let len = u32::from_le_bytes(bytes[end..end + 4].try_into().expect("4 bytes")) as usize;
        end = (end + 4 + len).min(bytes.len());
        frames += 1;
    }
    end.max(start + 1).min(bytes.len())
}

/// How many frames in `bytes` (whole frames from the start) that carry a
/// message, as opposed to a declaration, end after `offset`.
pub(in crate::transport) fn messages_from(bytes: &[u8], offset: usize) -> usize {
    let mut start = 0;
    let mut messages = 0;
    while start + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[start..start + 4].try_into().expect("4 bytes")) as usize;
        let end = start + 4 + len;
        if end > offset && carries_message(bytes[start + 4]) {
            messages += 1;
        }
        start = end;
    }
    messages
}

/// The whole frames of `bytes` whose kind is not among `kinds`, and how
/// many messages were left out.
pub(in crate::transport) fn without_kinds(bytes: &[u8], kinds: &[PduKind]) -> (Vec<u8>, usize) {
    let mut kept = Vec::with_capacity(bytes.len());
    let mut dropped = 0;
    let mut start = 0;
    while start + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[start..start + 4].try_into().expect("4 bytes")) as usize;
        let end = (start + 4 + len).min(bytes.len());
        let kind = bytes[start + 4];
        if kinds.iter().any(|k| *k as u8 == kind) {
            dropped += usize::from(carries_message(kind));
        } else {
            kept.extend_from_slice(&bytes[start..end]);
        }
        start = end;
    }
    (kept, dropped)
}

/// Frames whose loss is a dead letter. Not system messages: they are sent
/// again on the next connection, or answered when their node is given up.
fn carries_message(kind: u8) -> bool {
    matches!(
        PduKind::from_u8(kind),
        Some(
            PduKind::UserMessage
                | PduKind::Request
                | PduKind::Reply
                | PduKind::SpawnRequest
                | PduKind::SpawnResponse
        )
    )
}

/// The dispatcher-thread writer: runs at the end of a batch in which an
/// actor appended to this lane while its connection was idle.
impl<C: LaneConnection> BatchEnd for OutboundLane<C> {
    fn run(&self) {
        self.flush_queued.store(false, Ordering::Relaxed);
        let Some(mut conn) = self.take_idle_with_data() else {
            return;
        };
        for _ in 0..FLUSH_ROUNDS {
            match conn.try_write_all(self.max_frames_per_write) {
                Ok(true) => {}
                Ok(false) => return self.hand_off(conn),
                Err(e) => {
                    conn.fail(e);
                    return self.hand_off(conn);
                }
            }
            if let Err(idle) = self.refill_or_park(conn) {
                conn = idle;
            } else {
                return;
            }
        }
        self.hand_off(conn);
    }
}

/// The writer task of one lane: connect, serve, reconnect after a failure.
pub(crate) async fn run_writer(lane: Arc<OutboundLane>, core: Arc<impl OutboundContext>) {
    let core = &*core;
    let mut backoff = Backoff::new(core.settings());
    loop {
        if core.is_shut_down() || (lane.is_retired() && core.writer_may_exit(&lane)) {
            return;
        }
        let connected = match connect(&lane, core).await {
            Ok((stream, tls, accepted)) => {
                let conn = Connection::new(stream.clone(), tls);
                let peer = Incarnation::new(accepted.peer_uid, accepted.peer_stamp);
                match admit(&lane, core, peer) {
                    Ok(()) => Ok((stream, conn, accepted.features)),
                    Err(refusal) => {
                        refuse(conn, &refusal).await;
                        Err(format!("not associating: {refusal}"))
                    }
                }
            }
            Err(why) => Err(why),
        };
        let (stream, mut conn, features) = match connected {
            Ok(connected) => connected,
            Err(why) => {
                lane.set_failing(true);
                let pause = backoff.failed();
                report(
                    &mut backoff,
                    &lane,
                    core,
                    format_args!("{why}; retrying in {pause:?}"),
                );
                backoff.sleep(pause, &lane.redial).await;
                continue;
            }
        };
        backoff.connected(&lane.redial);
        lane.set_failing(false);
        lane.set_connected(true);
        lane.peer_decodes(core, features);
        lane.redeclare(core, &mut conn.out);
        if let Some(association) = lane.association() {
            association.proved();
            if lane.lane == Lane::Control {
                core.resend_unacknowledged(&association, &mut conn.out);
            }
        }
        let served = serve(&lane, core, conn, &stream).await;
        lane.set_connected(false);
        let (conn, error) = match served {
            Served::Failed(conn, error) => {
                lane.set_failing(true);
                (conn, error)
            }
            Served::ShutDown => return,
            // The connection is closed; the loop's top decides whether
            // this task ends or the association was started again.
            Served::Retired => continue,
        };
        // A connection dropped because the node is gone (or restarted:
        // `Restarted` is announced), or closed by a node that said
        // goodbye, is announced with that reason instead.
        let gone = is_dropped_by_us(&error)
            || lane.association().is_some_and(|a| {
                a.is_down() || a.leaving.load(std::sync::atomic::Ordering::Relaxed)
            });
        if lane.lane == Lane::Control && !gone {
            if let Some(association) = lane.association() {
                core.control_connection_lost(&association);
            }
            core.publish(RemotingEvent::Disassociated {
                remote: lane.remote.clone(),
                reason: DisassociationReason::ConnectionLost(error.to_string()),
            });
        }
        drop(stream);
        let lost = conn.unwritten_messages();
        drop(conn);
        for _ in 0..lost {
            core.count_dead_letter(&lane.remote, DeadLetterReason::Undeliverable);
        }
        let pause = backoff.failed();
        report(
            &mut backoff,
            &lane,
            core,
            format_args!("connection lost: {error}; {lost} messages not completely written were dropped; reconnecting in {pause:?}"),
        );
        backoff.sleep(pause, &lane.redial).await;
    }
}

/// A failure of the lane's connection: a warning if `backoff` says one is
/// due and the node's limit allows (thousands of associations that fail
/// at once must not flood the log), else a debug line. The limit is the
/// node's, not the process's: one node's failures do not hide another's.
fn report(
    backoff: &mut Backoff,
    lane: &OutboundLane,
    core: &(impl OutboundContext + ?Sized),
    what: std::fmt::Arguments<'_>,
) {
    if backoff.should_warn() && core.may_warn_of_failed_connect() {
        tracing::warn!(remote = %lane.remote, lane = ?lane.lane, "{what}");
    } else {
        tracing::debug!(remote = %lane.remote, lane = ?lane.lane, "{what}");
    }
}

/// Warnings about failed connections, of all a node's lanes together, at
/// most this many a second.
pub(crate) const CONNECT_WARNINGS_PER_SECOND: u32 = 10;

/// Whether this lane may talk to incarnation `peer`.
fn admit(
    lane: &OutboundLane,
    core: &(impl OutboundContext + ?Sized),
    peer: Incarnation,
) -> Result<(), Refusal> {
    match lane.association() {
        Some(association) => core.incarnation_answered(&association, peer, lane.lane),
        None => Ok(()),
    }
}

/// Tells a refused incarnation why before closing (it may not know it is
/// quarantined); best effort, bounded in time.
async fn refuse(mut conn: Connection, refusal: &Refusal) {
    let reason = match refusal {
        Refusal::Quarantined(_) => DisassociateReason::Quarantined,
        Refusal::Gone(_) | Refusal::Superseded { .. } => DisassociateReason::HandshakeFailed,
    };
    let text = refusal.to_string();
    let goodbye = Pdu::Disassociate(Disassociate {
        reason,
        text: &text,
    });
    let mut out = BytesMut::new();
    if Encoder::for_lane(Lane::Control)
        .encode(&goodbye, &mut out)
        .is_ok()
    {
        conn.take_from(&mut out);
        let _ = tokio::time::timeout(Duration::from_millis(100), conn.write_all(usize::MAX)).await;
    }
}

/// Connects and handshakes, within the handshake timeout; returns the
/// stream and the peer's incarnation.
async fn connect(
    lane: &OutboundLane,
    core: &(impl OutboundContext + ?Sized),
) -> Result<(Arc<TcpStream>, Option<TlsSession>, Accepted), String> {
    let connected = tokio::time::timeout(
        core.settings().handshake_timeout,
        crate::transport::handshake::setup::dial(core, &lane.remote, lane.lane),
    )
    .await;
    match connected {
        Ok(Ok(dialed)) => {
            let (peer_uid, features) = (dialed.accepted.peer_uid, dialed.accepted.features);
            tracing::debug!(remote = %lane.remote, lane = ?lane.lane, peer_uid, ?features, "connected");
            Ok((Arc::new(dialed.stream), dialed.tls, dialed.accepted))
        }
        Ok(Err(HandshakeError::Refused {
            status: HandshakeStatus::Quarantined,
            reason,
        })) => {
            // This node's incarnation is refused there for good: that
            // incarnation is as good as gone for this one.
            if let Some(association) = lane.association() {
                core.refused_by_peer(&association, DisassociationReason::Quarantined);
            }
            Err(format!("the peer refuses this node: {reason}"))
        }
        Ok(Err(e)) => Err(format!("cannot connect: {e}")),
        Err(_) => Err("handshake timed out".into()),
    }
}

/// How serving a connection ended.
enum Served {
    /// It failed (or was dropped for a node that is gone).
    Failed(Connection, io::Error),
    /// Remoting shut down.
    ShutDown,
    /// The association was stopped for idleness: everything queued was
    /// written, its goodbye last, and the connection closed.
    Retired,
}

/// Writes the lane's bytes to one connection until it fails, remoting
/// shuts down, or the association is stopped. While the connection is
/// idle, watches `stream` for the peer's close, so that what is sent next
/// waits for a new connection instead of going into a socket whose peer is
/// gone.
async fn serve(
    lane: &OutboundLane,
    core: &(impl OutboundContext + ?Sized),
    mut conn: Connection,
    stream: &TcpStream,
) -> Served {
    let batching = &core.settings().batching;
    // Resets asked before this connection existed are not for it.
    let epoch = lane.reset_epoch();
    loop {
        let failure = match conn.failed.take() {
            Some(e) => Err(e),
            None => write_unless_reset(lane, &mut conn, epoch).await,
        };
        if let Err(e) = failure {
            return Served::Failed(conn, e);
        }
        if let Err(more) = lane.refill_or_park(conn) {
            conn = more;
            continue;
        }
        // Parked: wait until a sender or a dispatcher thread needs us, or
        // the peer closes the connection.
        let mut peer_closed = false;
        conn = loop {
            if lane.is_retired() {
                // What is queued (the goodbye) is written first; then the
                // connection closes.
                if let Some(conn) = lane.take_handoff_or_idle() {
                    break conn;
                }
                if lane.take_any().is_some() {
                    return Served::Retired;
                }
                // A dispatcher thread is finishing a write: it parks the
                // connection in a moment.
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
            let mut reset = false;
            if peer_closed {
                tokio::select! {
                    biased;
                    () = lane.reset.notified() => reset = lane.reset_epoch() != epoch,
                    () = lane.wake_writer.notified() => {}
                }
            } else {
                tokio::select! {
                    biased;
                    () = lane.reset.notified() => reset = lane.reset_epoch() != epoch,
                    () = closed_by_peer(stream) => peer_closed = true,
                    () = lane.wake_writer.notified() => {}
                }
            }
            if core.is_shut_down() {
                return Served::ShutDown;
            }
            if reset {
                if let Some(mut conn) = lane.take_any() {
                    conn.fail(dropped_by_us());
                    break conn;
                }
                // A dispatcher thread holds the connection: ask again, so
                // the next wake-up finds it back.
                lane.reset.notify_one();
                tokio::task::yield_now().await;
                continue;
            }
            if peer_closed {
                // Whoever holds the connection now finds out on its next
                // write and hands it over; until then, wait for that.
                if let Some(mut conn) = lane.take_any() {
                    conn.fail(io::Error::new(
                        io::ErrorKind::ConnectionReset,
                        "the peer closed the connection",
                    ));
                    break conn;
                }
                continue;
            }
            if !batching.flush_interval.is_zero() {
                tokio::time::sleep(batching.flush_interval).await;
            } else if batching.batches() {
                // Senders on this runtime (tasks that `ask`, say) woke
                // us with their first message; tokio would run us right
                // after that sender (its LIFO slot), one write per
                // message. Going to the back of the run queue once lets
                // every sender that is ready append first.
                tokio::task::yield_now().await;
            }
            if let Some(conn) = lane.take_handoff_or_idle() {
                break conn;
            }
        };
    }
}

/// Writes what the connection holds, unless the lane is reset meanwhile
/// (a peer that never reads would otherwise hold the writer forever).
async fn write_unless_reset(
    lane: &OutboundLane,
    conn: &mut Connection,
    epoch: u64,
) -> io::Result<()> {
    // Most writes go through at once: no waiter to register for those.
    if conn.try_write_all(lane.max_frames_per_write)? {
        return Ok(());
    }
    loop {
        tokio::select! {
            biased;
            () = lane.reset.notified() => {
                if lane.reset_epoch() != epoch {
                    return Err(dropped_by_us());
                }
            }
            // Cancel-safe: progress lives in `conn`, and a cancelled
            // `writable()` loses nothing.
            written = conn.write_all(lane.max_frames_per_write) => return written,
        }
    }
}

/// This node dropped the connection: the incarnation it reached is gone
/// (given up, left, or replaced by a restart).
#[derive(Debug, thiserror::Error)]
#[error("the connection was dropped: the incarnation it reached is gone")]
struct DroppedByUs;

fn dropped_by_us() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, DroppedByUs)
}

/// Whether `error` is [`dropped_by_us`]'s.
fn is_dropped_by_us(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|e| e.is::<DroppedByUs>())
}

/// Resolves when the peer has closed or reset `stream`. The peer writes
/// nothing after its handshake response, so readability means the end; a
/// peer that does write is not this watcher's to read, and it stops.
async fn closed_by_peer(stream: &TcpStream) {
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte).await {
        Ok(0) | Err(_) => {}
        Ok(_) => std::future::pending().await,
    }
}

mod connection;
#[cfg(test)]
mod tests;

pub(crate) use connection::{Connection, TlsSession};
