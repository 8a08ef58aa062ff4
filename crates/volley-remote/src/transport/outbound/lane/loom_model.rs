//! Loom models of the write token (`token.rs`): every interleaving of a few
//! senders, dispatcher-thread flushes and the writer task, run on the
//! production lane code with a connection that writes to memory.
//!
//! Run with `cargo test -p volley-remote --lib --features loom-model loom`
//! (`.ci/run` does). The models
//! are small enough to explore every interleaving; should one grow past
//! that, bound it with `LOOM_MAX_PREEMPTIONS=2` or 3.
//!
//! Each model ends the way a quiet lane does: every thread has finished, the
//! dispatcher threads have run what they deferred at the end of their batch,
//! and the writer task has handled the wake-up it was sent, if any. Then:
//!
//! - nothing is left queued, handed off or flagged as a pending flush (no
//!   lost wake-up: a byte still queued here would wait for the next sender);
//! - the token is back in the lane, and what it wrote holds every byte
//!   appended exactly once, each sender's in the order it sent them (never
//!   two writers: a second one would write twice, or out of order, or load
//!   new bytes over unwritten ones, which `MemConn` refuses).
//!
//! The writer task here is `run_writer`'s loops without the socket: it runs
//! only when its `Notify` holds a permit, takes a handed-off or idle
//! connection, writes until the buffer is empty and parks.

use std::io;
use std::sync::Arc;

use bytes::BytesMut;
use loom::thread;

use super::{LaneConnection, OutboundLane};
use crate::sync::{batch_end, Ordering};
use crate::transport::BatchingSettings;
use crate::wire::{Address, Lane};

/// A connection whose socket is the `sent` vector.
struct MemConn {
    out: BytesMut,
    written: usize,
    sent: Vec<u8>,
    /// How many more writes find the socket full after one byte.
    stalls: usize,
}

impl MemConn {
    fn new(stalls: usize) -> Self {
        MemConn {
            out: BytesMut::new(),
            written: 0,
            sent: Vec::new(),
            stalls,
        }
    }
}

impl LaneConnection for MemConn {
    fn take_from(&mut self, queued: &mut BytesMut) {
        assert_eq!(
            self.written,
            self.out.len(),
            "new bytes loaded over unwritten ones"
        );
        self.out.clear();
        std::mem::swap(&mut self.out, queued);
        self.written = 0;
    }

    fn taken(&self) -> &[u8] {
        &self.out
    }

    fn try_write_all(&mut self, _max_frames: usize) -> io::Result<bool> {
        if self.stalls > 0 && self.written < self.out.len() {
            self.stalls -= 1;
            self.sent.push(self.out[self.written]);
            self.written += 1;
            return Ok(false);
        }
        self.sent.extend_from_slice(&self.out[self.written..]);
        self.written = self.out.len();
        Ok(true)
    }

    fn fail(&mut self, error: io::Error) {
        panic!("no write fails in the models: {error}");
    }
}

type ModelLane = Arc<OutboundLane<MemConn>>;

/// A lane whose writer task has connected and parked the token, with
/// dispatcher-thread writes on (the default settings).
fn connected_lane(stalls: usize) -> ModelLane {
    let lane = unconnected_lane();
    assert!(lane.refill_or_park(MemConn::new(stalls)).is_ok());
    lane
}

/// A lane whose writer task is still connecting: no token yet.
fn unconnected_lane() -> ModelLane {
    let remote = Address::new("peer", "127.0.0.1", 2552).expect("valid address");
    Arc::new(OutboundLane::new(
        Lane::Ordinary,
        remote,
        1024,
        &BatchingSettings::default(),
        None,
    ))
}

/// Appends one single-byte frame as `send_user` does (its kick may defer).
fn send(lane: &ModelLane, byte: u8) {
    let mut st = lane.state.lock();
    let was_empty = st.buf.is_empty();
    st.buf.extend_from_slice(&[byte]);
    lane.unlock_and_kick(st, was_empty, true);
}

/// A dispatcher thread whose actors send `bytes` in one batch.
fn dispatcher(lane: &ModelLane, bytes: &'static [u8]) -> thread::JoinHandle<()> {
    let lane = lane.clone();
    thread::spawn(move || {
        batch_end::enter_worker();
        for &b in bytes {
            send(&lane, b);
        }
        batch_end::run_pending();
    })
}

/// A sender that is not a dispatcher thread (a tokio task, say).
fn task(lane: &ModelLane, bytes: &'static [u8]) -> thread::JoinHandle<()> {
    let lane = lane.clone();
    thread::spawn(move || {
        for &b in bytes {
            send(&lane, b);
        }
    })
}

/// The writer task's loops once it holds `conn`: write, refill, park.
fn write_until_parked(lane: &ModelLane, mut conn: MemConn) {
    loop {
        while !conn
            .try_write_all(lane.max_frames_per_write)
            .expect("memory does not fail")
        {}
        match lane.refill_or_park(conn) {
            Ok(()) => return,
            Err(more) => conn = more,
        }
    }
}

/// The writer task runs if it was woken; returns whether it was.
fn writer_task_wakes(lane: &ModelLane) -> bool {
    if !lane.wake_writer.take_permit() {
        return false;
    }
    if let Some(conn) = lane.take_handoff_or_idle() {
        write_until_parked(lane, conn);
    }
    true
}

/// The writer task, scheduled `runs` times while the other threads run.
fn writer_task(lane: &ModelLane, runs: usize) -> thread::JoinHandle<()> {
    let lane = lane.clone();
    thread::spawn(move || {
        for _ in 0..runs {
            writer_task_wakes(&lane);
        }
    })
}

/// Lets the lane go quiet, then checks it (see the module docs).
fn check_quiet(lane: &ModelLane, senders: &[&[u8]]) {
    while writer_task_wakes(lane) {}
    let mut st = lane.state.lock();
    assert!(st.handoff.is_none(), "a handed-off connection nobody took");
    assert!(
        st.buf.is_empty(),
        "lost wake-up: {:?} queued and no writer on the way",
        &st.buf[..]
    );
    let conn = st.idle.take().expect("the token is back in the lane");
    drop(st);
    assert!(
        !lane.flush_queued.load(Ordering::Relaxed),
        "a stale flush_queued silences the next dispatcher-thread kick"
    );
    assert_eq!(conn.written, conn.out.len());
    let mut sent = conn.sent.clone();
    sent.sort_unstable();
    let mut appended: Vec<u8> = senders.concat();
    appended.sort_unstable();
    assert_eq!(sent, appended, "each byte written exactly once");
    for bytes in senders {
        let theirs: Vec<u8> = conn
            .sent
            .iter()
            .copied()
            .filter(|b| bytes.contains(b))
            .collect();
        assert_eq!(&theirs[..], *bytes, "a sender's bytes out of order");
    }
}

/// Joins the model's threads, then checks the lane once it is quiet.
fn join_and_check<const N: usize>(
    lane: &ModelLane,
    threads: [thread::JoinHandle<()>; N],
    senders: &[&[u8]],
) {
    for t in threads {
        t.join().unwrap();
    }
    check_quiet(lane, senders);
}

/// A dispatcher thread and a task send while the writer task runs; the
/// socket is full for the first `stalls` writes.
fn dispatcher_and_task_with_the_writer_task(stalls: usize) {
    loom::model(move || {
        let lane = connected_lane(stalls);
        let threads = [
            dispatcher(&lane, &[0x10, 0x11]),
            task(&lane, &[0x20]),
            writer_task(&lane, 2),
        ];
        join_and_check(&lane, threads, &[&[0x10, 0x11], &[0x20]]);
    });
}

/// A dispatcher thread's flush and the writer task, woken by a sender off
/// the dispatcher, compete for the token.
#[test]
fn loom_dispatcher_flush_and_writer_task_compete() {
    dispatcher_and_task_with_the_writer_task(0);
}

/// A dispatcher thread finds the socket full and hands the token to the
/// writer task while another sender appends.
#[test]
fn loom_hand_off_to_the_writer_task_during_an_append() {
    dispatcher_and_task_with_the_writer_task(1);
}

/// Senders on and off a dispatcher thread append while the writer task
/// writes and parks the token.
#[test]
fn loom_append_while_the_writer_task_parks() {
    loom::model(|| {
        let lane = connected_lane(0);
        send(&lane, 0x00);
        let threads = [
            writer_task(&lane, 2),
            dispatcher(&lane, &[0x10, 0x11]),
            task(&lane, &[0x20]),
        ];
        join_and_check(&lane, threads, &[&[0x00], &[0x10, 0x11], &[0x20]]);
    });
}

/// Two dispatcher threads kick the same lane: one flush serves both, and
/// `flush_queued` must not outlive it. The first thread ends two batches.
#[test]
fn loom_two_dispatcher_threads_share_a_flush() {
    loom::model(|| {
        let lane = connected_lane(0);
        let first = {
            let lane = lane.clone();
            thread::spawn(move || {
                batch_end::enter_worker();
                send(&lane, 0x10);
                batch_end::run_pending();
                send(&lane, 0x11);
                batch_end::run_pending();
            })
        };
        let second = dispatcher(&lane, &[0x20]);
        join_and_check(&lane, [first, second], &[&[0x10, 0x11], &[0x20]]);
    });
}

/// A sender appends while the writer task is still connecting: the first
/// write of the new connection takes the bytes.
#[test]
fn loom_append_while_the_writer_task_connects() {
    loom::model(|| {
        let lane = unconnected_lane();
        let sender = dispatcher(&lane, &[0x10, 0x11]);
        let connect = {
            let lane = lane.clone();
            thread::spawn(move || write_until_parked(&lane, MemConn::new(0)))
        };
        join_and_check(&lane, [sender, connect], &[&[0x10, 0x11]]);
    });
}
