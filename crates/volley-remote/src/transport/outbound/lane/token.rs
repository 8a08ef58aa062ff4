//! The write token of an outbound lane: who may write the lane's connection,
//! and how the bytes senders append always reach a writer.
//!
//! The connection is the token (see `outbound/writer.rs` for the two kinds of
//! writers). The invariants, all kept under the lane's lock:
//!
//! - the token is in at most one place: `idle` (nobody writes), `handoff`
//!   (a dispatcher thread gave up, the writer task carries on) or in a
//!   writer's hands; it moves, so two writers cannot hold it;
//! - a writer takes the queued bytes only into a connection whose previous
//!   bytes are all written, and lets go of the token only when the buffer is
//!   empty (`refill_or_park`), so nothing is written twice or out of order;
//! - bytes queued while the token is idle have a writer on the way: the
//!   sender that found the buffer empty and the token idle kicks one
//!   (`unlock_and_kick`), and every later sender finds the buffer non-empty
//!   until that writer takes it.
//!
//! Generic over the connection so that the loom models (`loom_model.rs`) run
//! this code with a connection that writes to memory.

use std::io;
use std::sync::Arc;

use bytes::BytesMut;
use volley::batch_end::BatchEnd;

use super::{LaneState, OutboundLane};
use crate::sync::{self, Ordering, SpinLockGuard};

/// What a lane's write token carries: a connection and the bytes being
/// written to it.
pub(crate) trait LaneConnection: Send + 'static {
    /// Swaps the lane's queued bytes in; only once everything taken before
    /// is written.
    fn take_from(&mut self, queued: &mut BytesMut);
    /// The bytes the last `take_from` swapped in (for the lane's meter).
    fn taken(&self) -> &[u8];
    /// Writes without waiting: `Ok(true)` when everything is written,
    /// `Ok(false)` when the socket is full.
    fn try_write_all(&mut self, max_frames: usize) -> io::Result<bool>;
    /// Records a failed write for the writer task, which reconnects.
    fn fail(&mut self, error: io::Error);
}

impl<C: LaneConnection> OutboundLane<C> {
    /// Ends an append (`st` is the lock the sender appended under): the
    /// sender that queued the first bytes for an idle connection gets them a
    /// writer. Decided under the lock, which is what makes the decision
    /// agree with a writer parking the token. Inlined into every send, as
    /// the code it replaced was: only the kick itself is a call.
    #[inline(always)]
    pub(super) fn unlock_and_kick(
        self: &Arc<Self>,
        st: SpinLockGuard<'_, LaneState<C>>,
        was_empty: bool,
        may_defer: bool,
    ) {
        let kick = was_empty && st.idle.is_some() && !st.buf.is_empty();
        drop(st);
        if kick {
            self.kick(may_defer);
        }
    }

    /// Gets the first bytes appended to an idle connection written: by this
    /// dispatcher thread at the end of its batch when possible, else by the
    /// writer task.
    fn kick(self: &Arc<Self>, may_defer: bool) {
        if may_defer && self.direct_flush {
            // Relaxed is enough: a flush clears the flag before it locks to
            // take the token, and a sender gets here only after appending
            // under that lock. A sender that still sees the flag set
            // appended before that flush locked, so the flush takes its
            // bytes; one that appended after is ordered after the clear by
            // the lock, so it sees the flag clear (or set by a newer kick).
            if self.flush_queued.swap(true, Ordering::Relaxed) {
                return;
            }
            if sync::defer(|| self.clone() as Arc<dyn BatchEnd>) {
                return;
            }
            self.flush_queued.store(false, Ordering::Relaxed);
        }
        self.wake_writer.notify_one();
    }

    /// The idle connection, loaded with the queued bytes; `None` if somebody
    /// else is writing (they will see the bytes) or nothing is queued.
    pub(crate) fn take_idle_with_data(&self) -> Option<C> {
        let mut st = self.state.lock();
        if st.buf.is_empty() {
            return None;
        }
        let mut conn = st.idle.take()?;
        self.load(&mut st, &mut conn);
        drop(st);
        self.meter(&conn);
        Some(conn)
    }

    /// After a complete write: loads the next queued bytes into `conn`
    /// (`Err(conn)`: keep writing), or puts the connection back as idle.
    pub(crate) fn refill_or_park(&self, mut conn: C) -> Result<(), C> {
        let mut st = self.state.lock();
        if st.buf.is_empty() {
            st.idle = Some(conn);
            return Ok(());
        }
        self.load(&mut st, &mut conn);
        drop(st);
        self.meter(&conn);
        Err(conn)
    }

    /// Gives a connection with bytes left to the writer task.
    pub(crate) fn hand_off(&self, conn: C) {
        self.state.lock().handoff = Some(conn);
        self.wake_writer.notify_one();
    }

    /// What the writer task, once woken, should write: a handed-off
    /// connection, or the idle one if bytes are queued.
    pub(crate) fn take_handoff_or_idle(&self) -> Option<C> {
        let mut st = self.state.lock();
        if let Some(conn) = st.handoff.take() {
            return Some(conn);
        }
        if st.buf.is_empty() {
            return None;
        }
        let mut conn = st.idle.take()?;
        self.load(&mut st, &mut conn);
        drop(st);
        self.meter(&conn);
        Some(conn)
    }

    /// The connection, wherever it waits (handed off or idle, with or
    /// without queued bytes), for a writer task that has learnt that the
    /// peer closed it; `None` while somebody else writes.
    pub(crate) fn take_any(&self) -> Option<C> {
        let mut st = self.state.lock();
        st.handoff.take().or_else(|| st.idle.take())
    }

    fn load(&self, st: &mut LaneState<C>, conn: &mut C) {
        if self.lane != crate::wire::Lane::Control {
            st.activity += 1;
        }
        st.bytes_out += st.buf.len() as u64;
        conn.take_from(&mut st.buf);
        // Nothing queued before now is left in the lane.
        st.exports.get_mut().note_load();
        if self.full.swap(false, Ordering::Relaxed) {
            self.room.notify_waiters();
        }
    }

    /// Records the batch just loaded into `conn`, if metered. After the
    /// lane's lock is released: senders append under that lock, and the
    /// frame walk and the histograms must not make them wait.
    #[inline]
    fn meter(&self, conn: &C) {
        if let Some(meter) = &self.meter {
            let frames = meter.batch(conn.taken());
            self.frames_out
                .fetch_add(frames, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Closes the connection if nobody is writing to it (shutdown).
    /// True when everything queued has been written and the connection is
    /// parked: nothing of this lane is on its way.
    pub(crate) fn is_drained(&self) -> bool {
        let st = self.state.lock();
        st.buf.is_empty() && st.handoff.is_none() && st.idle.is_some()
    }

    /// Notes whether the lane's last connect attempt or connection failed.
    pub(crate) fn set_failing(&self, failing: bool) {
        self.failing
            .store(failing, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a leaving node should wait for this lane: it is connected
    /// and not drained, or it has something queued and is connecting,
    /// since messages sent just before `terminate` wait there. A lane
    /// whose last attempt failed is waited for only while its peer is
    /// `peer_alive` (it answers on another lane): on a loaded machine a
    /// first handshake can time out and succeed on the redial, while a
    /// peer that is gone would only hold the leave to its deadline.
    pub(crate) fn awaits_flush(&self, peer_alive: bool) -> bool {
        if self.is_connected() {
            return !self.is_drained();
        }
        (peer_alive || !self.failing.load(std::sync::atomic::Ordering::Relaxed))
            && !self.state.lock().buf.is_empty()
    }

    /// Closes the lane for good (the node shuts down): its connection,
    /// and the refs its export table holds. A remote ref's route holds
    /// its association, so a table holding a ref to an actor of its own
    /// peer kept that association, and through it the whole node, alive
    /// after shutdown.
    pub(crate) fn close(&self) {
        let mut st = self.state.lock();
        st.idle = None;
        st.handoff = None;
        st.exports.get_mut().clear();
        st.generation = st.generation.next();
    }
}
