//! A session's outbound frames: numbered, held until the client
//! acknowledges them (the resend buffer), bounded.
//!
//! The session actor pushes; the connection of the moment (a WebSocket
//! task, or a long-poll `recv`) takes what it has not sent yet. Each
//! attachment of a connection gets a generation and a waker of its own,
//! so that a connection replaced by a resumed one notices and leaves.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::frame::{encode, Encoding, ServerFrame};
use crate::settings::SlowConsumer;

/// Unsequenced frames (pings, pongs) held at most; more are dropped, as
/// a client that does not read does not need more than one pong.
const MAX_CONTROL: usize = 16;

/// Why a session's connection must close, as a WebSocket close code and
/// reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Closing {
    pub(crate) code: u16,
    pub(crate) reason: String,
}

/// What became of a pushed frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Queued.
    Queued,
    /// Queued; the oldest frame was dropped, never sent (a dead letter).
    DroppedUnsent,
    /// Queued; the oldest frame was dropped after it was sent.
    DroppedSent,
    /// The queue is full and the policy is `close`.
    Overflow,
    /// The session has ended: nobody will send it.
    Ended,
}

/// What a connection's leaving asks of the session actor.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// Another connection had taken over: nothing.
    Replaced,
    /// The session has no connection and no grace timer: start one.
    StartGrace,
    /// The grace timer is already running; it counts from this detach
    /// when it fires. A long-poll client detaches after every `recv`, so
    /// re-arming a timer each time would cost a message and a timer per
    /// poll.
    GraceRunning,
}

/// What the grace timer finds when it fires.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Grace {
    /// A connection is attached: the timer is off until the next detach.
    Attached,
    /// No connection for the whole grace period: the session ends.
    Expired,
    /// Detached for less than the grace period: wait this much more.
    Wait(Duration),
}

/// What a connection takes.
#[derive(Debug)]
pub(crate) enum Taken {
    /// Frames to send, in order (may be empty).
    Frames(Vec<Bytes>),
    /// Another connection took the session over.
    Replaced,
    /// The server drops the connection; the session waits to be resumed.
    Dropped,
    /// The session has ended.
    Closed(Closing),
}

struct State {
    next_seq: u64,
    /// Sequenced frames not yet acknowledged, oldest first.
    held: VecDeque<(u64, Bytes)>,
    /// The highest sequence number handed to a connection.
    sent: u64,
    control: VecDeque<Bytes>,
    generation: u64,
    attached: bool,
    waker: Arc<Notify>,
    closing: Option<Closing>,
    /// The connection of this generation is to be dropped.
    dropping: Option<u64>,
    /// The session actor has a grace timer armed (or is about to).
    grace_armed: bool,
    /// When the last connection left.
    detached_at: Option<Instant>,
}

pub(crate) struct Outbox {
    encoding: Encoding,
    max_queued: usize,
    policy: SlowConsumer,
    state: Mutex<State>,
}

impl Outbox {
    pub(crate) fn new(encoding: Encoding, max_queued: usize, policy: SlowConsumer) -> Self {
        Outbox {
            encoding,
            max_queued: max_queued.max(1),
            policy,
            state: Mutex::new(State {
                next_seq: 1,
                held: VecDeque::new(),
                sent: 0,
                control: VecDeque::new(),
                generation: 0,
                attached: false,
                waker: Arc::new(Notify::new()),
                closing: None,
                dropping: None,
                grace_armed: false,
                detached_at: None,
            }),
        }
    }

    pub(crate) fn encoding(&self) -> Encoding {
        self.encoding
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding it cannot leave the queue half-changed.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Numbers, encodes and queues the frame `make` builds from its
    /// sequence number.
    pub(crate) fn push(&self, make: impl FnOnce(u64) -> ServerFrame) -> Pushed {
        let mut state = self.lock();
        if state.closing.is_some() {
            return Pushed::Ended;
        }
        let full = state.held.len() >= self.max_queued;
        if full && self.policy == SlowConsumer::Close {
            return Pushed::Overflow;
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        let bytes = encode(self.encoding, &make(seq));
        state.held.push_back((seq, bytes));
        let mut pushed = Pushed::Queued;
        if full {
            if let Some((oldest, _)) = state.held.pop_front() {
                pushed = if oldest > state.sent {
                    Pushed::DroppedUnsent
                } else {
                    Pushed::DroppedSent
                };
            }
        }
        state.waker.notify_one();
        pushed
    }

    /// Queues an unsequenced frame (ping, pong), not held for resending.
    pub(crate) fn push_control(&self, frame: &ServerFrame) {
        let mut state = self.lock();
        if state.control.len() < MAX_CONTROL {
            state.control.push_back(encode(self.encoding, frame));
            state.waker.notify_one();
        }
    }

    /// The client has every frame up to `seq`: they need not be held.
    pub(crate) fn ack(&self, seq: u64) {
        let mut state = self.lock();
        while state.held.front().is_some_and(|(s, _)| *s <= seq) {
            state.held.pop_front();
        }
    }

    /// A connection takes the session over; with `last_seq`, the frames
    /// after it are sent again. The connection before, if any, is woken
    /// to find itself replaced.
    pub(crate) fn attach(&self, last_seq: Option<u64>) -> (u64, Arc<Notify>) {
        let mut state = self.lock();
        if let Some(last) = last_seq {
            drop(state);
            self.ack(last);
            state = self.lock();
            state.sent = last.min(state.next_seq - 1);
        }
        state.generation += 1;
        if std::mem::replace(&mut state.attached, true) {
            // The connection replaced may be waiting: woken, it finds
            // itself replaced, and the new one gets a waker of its own.
            // With none attached (a long-poll `recv` after the last one
            // left) nobody waits on the waker, which is kept: no
            // allocation per poll.
            state.waker.notify_one();
            state.waker = Arc::new(Notify::new());
        }
        // Frames may already wait: the new connection looks at once.
        state.waker.notify_one();
        (state.generation, state.waker.clone())
    }

    /// The connection of `generation` has gone: unless another took over,
    /// the grace period starts again from now.
    pub(crate) fn detach(&self, generation: u64) -> Left {
        let mut state = self.lock();
        if state.generation != generation {
            return Left::Replaced;
        }
        state.attached = false;
        state.detached_at = Some(Instant::now());
        if std::mem::replace(&mut state.grace_armed, true) {
            Left::GraceRunning
        } else {
            Left::StartGrace
        }
    }

    /// The grace timer has fired: whether the session has been without a
    /// connection for `grace` since its last detach.
    pub(crate) fn grace_check(&self, grace: Duration) -> Grace {
        let mut state = self.lock();
        if state.attached {
            state.grace_armed = false;
            return Grace::Attached;
        }
        let since = state.detached_at.map_or(grace, |at| at.elapsed());
        match grace.checked_sub(since) {
            Some(left) if !left.is_zero() => Grace::Wait(left),
            _ => Grace::Expired,
        }
    }

    /// True while no connection took over since `generation` left.
    pub(crate) fn detached_since(&self, generation: u64) -> bool {
        let state = self.lock();
        state.generation == generation && !state.attached
    }

    /// What the connection of `generation` has to send.
    pub(crate) fn take(&self, generation: u64) -> Taken {
        let mut state = self.lock();
        if state.generation != generation {
            return Taken::Replaced;
        }
        if let Some(closing) = &state.closing {
            return Taken::Closed(closing.clone());
        }
        if state.dropping == Some(generation) {
            state.dropping = None;
            return Taken::Dropped;
        }
        let mut frames: Vec<Bytes> = state.control.drain(..).collect();
        let sent = state.sent;
        frames.extend(
            state
                .held
                .iter()
                .filter(|(seq, _)| *seq > sent)
                .map(|(_, bytes)| bytes.clone()),
        );
        state.sent = state.next_seq - 1;
        Taken::Frames(frames)
    }

    /// Drops the current connection, if any; the session stays.
    pub(crate) fn drop_connection(&self) {
        let mut state = self.lock();
        if state.attached {
            state.dropping = Some(state.generation);
            state.waker.notify_one();
        }
    }

    /// Ends the session: its connection closes with `closing`.
    pub(crate) fn close(&self, closing: Closing) {
        let mut state = self.lock();
        if state.closing.is_none() {
            state.closing = Some(closing);
        }
        state.waker.notify_one();
    }

    /// Frames queued and never sent.
    pub(crate) fn unsent(&self) -> usize {
        let state = self.lock();
        state
            .held
            .iter()
            .filter(|(seq, _)| *seq > state.sent)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn frame(seq: u64) -> ServerFrame {
        ServerFrame::Pub {
            seq,
            topic: "t".into(),
            msg: Value::Null,
        }
    }

    #[test]
    fn resume_resends_what_the_client_lacks() {
        let outbox = Outbox::new(Encoding::Json, 8, SlowConsumer::DropOldest);
        let (g1, _) = outbox.attach(None);
        for _ in 0..3 {
            outbox.push(frame);
        }
        let Taken::Frames(first) = outbox.take(g1) else {
            panic!()
        };
        assert_eq!(first.len(), 3);
        let (g2, _) = outbox.attach(Some(1));
        assert!(matches!(outbox.take(g1), Taken::Replaced));
        let Taken::Frames(again) = outbox.take(g2) else {
            panic!()
        };
        assert_eq!(again, first[1..].to_vec());
    }

    #[test]
    fn a_full_queue_drops_the_oldest_or_overflows() {
        let outbox = Outbox::new(Encoding::Json, 2, SlowConsumer::DropOldest);
        assert_eq!(outbox.push(frame), Pushed::Queued);
        assert_eq!(outbox.push(frame), Pushed::Queued);
        assert_eq!(outbox.push(frame), Pushed::DroppedUnsent);
        let closing = Outbox::new(Encoding::Json, 1, SlowConsumer::Close);
        assert_eq!(closing.push(frame), Pushed::Queued);
        assert_eq!(closing.push(frame), Pushed::Overflow);
    }

    #[test]
    fn a_pushed_frame_after_the_end_is_reported_as_such() {
        let outbox = Outbox::new(Encoding::Json, 2, SlowConsumer::DropOldest);
        outbox.close(Closing {
            code: 1000,
            reason: String::new(),
        });
        assert_eq!(outbox.push(frame), Pushed::Ended);
    }

    #[test]
    fn a_poll_after_the_last_one_left_keeps_the_waker_and_a_takeover_replaces_it() {
        let outbox = Outbox::new(Encoding::Json, 2, SlowConsumer::DropOldest);
        let (g1, first) = outbox.attach(None);
        outbox.detach(g1);
        let (_, second) = outbox.attach(Some(0));
        assert!(Arc::ptr_eq(&first, &second));
        // Attached still: the connection replaced keeps the old waker and
        // is not woken by the new connection's.
        let (g3, third) = outbox.attach(Some(0));
        assert!(!Arc::ptr_eq(&second, &third));
        assert!(matches!(outbox.take(g3 - 1), Taken::Replaced));
    }

    #[test]
    fn one_grace_timer_covers_many_detaches_and_counts_from_the_last() {
        let outbox = Outbox::new(Encoding::Json, 2, SlowConsumer::DropOldest);
        let grace = Duration::from_secs(3600);
        let (g1, _) = outbox.attach(None);
        assert_eq!(outbox.detach(g1), Left::StartGrace);
        let (g2, _) = outbox.attach(Some(0));
        assert_eq!(outbox.detach(g1), Left::Replaced);
        assert_eq!(outbox.detach(g2), Left::GraceRunning);
        // Detached just now: nearly the whole period is left.
        let Grace::Wait(left) = outbox.grace_check(grace) else {
            panic!()
        };
        assert!(left > grace / 2, "{left:?}");
        assert_eq!(outbox.grace_check(Duration::ZERO), Grace::Expired);
        // While attached the timer goes off, and the next detach re-arms it.
        let (g3, _) = outbox.attach(Some(0));
        assert_eq!(outbox.grace_check(grace), Grace::Attached);
        assert_eq!(outbox.detach(g3), Left::StartGrace);
    }
}
