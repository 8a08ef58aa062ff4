//! The ids of lasting refs on one lane: handed out counting up from
//! `TEMPORARY_IDS + 1`, at most `limits.max_exported_refs` of them, and
//! given out again once the local actor a ref named has stopped.
//!
//! Reusing an id is a re-declaration (wire-protocol.md §7): the peer's entry
//! is replaced for the frames after the new declaration, and TCP keeps the
//! frames before it on the old meaning. The one place that order does not
//! protect is a *new connection*: it starts by declaring every id the table
//! holds (`OutboundLane::redeclare`) and then carries the frames still
//! queued, so a queued frame that used an id under its old meaning would
//! be read under the new one. An id is therefore reused only once the lane's
//! queue has been taken by a writer at least once since the id was released
//! ([`LastingIds::note_load`]): a writer takes the whole queue, so no frame
//! that used the old meaning is still queued, and none written since can
//! use it (the released ref is no longer in the table: sending it again
//! gives it a new id). Frames already taken are written on the connection
//! they were taken for, or lost with it; they are never carried over.
//! Until then the released ref stays declared under its id on a new
//! connection, which keeps such queued frames meaning what they meant.
//!
//! Only refs to local actors that have terminated are released: a remote
//! ref's id may be cached in its route (`RouteHint::recipient`), and its
//! actor's end is not known here.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use volley::AnyRef;

use super::TEMPORARY_IDS;

/// While the table is full and a sweep found nothing to release, the next
/// sweep waits this long: a full table of live refs costs a refused message
/// a check, not a walk over every entry.
const FULL_SWEEP_PAUSE: Duration = Duration::from_millis(10);

/// A released id and the ref it named, kept until the lane's queue has been
/// taken after its release.
struct Released {
    id: u32,
    actor: AnyRef,
    /// The lane's load count when it was released.
    load: u64,
}

/// The lasting-id space of one lane's export table.
pub(super) struct LastingIds {
    /// The highest id handed out.
    highest: u32,
    max: usize,
    /// Ids safe to hand out again.
    free: Vec<u32>,
    /// Ids released, oldest first, not yet safe to reuse.
    released: VecDeque<Released>,
    /// How many times a writer took the lane's queue.
    loads: u64,
    /// New lasting refs since the last sweep.
    since_sweep: usize,
    last_full_sweep: Option<Instant>,
}

impl LastingIds {
    pub(super) fn new(max: usize) -> Self {
        LastingIds {
            highest: TEMPORARY_IDS,
            max,
            free: Vec::new(),
            released: VecDeque::new(),
            loads: 0,
            since_sweep: 0,
            last_full_sweep: None,
        }
    }

    /// The highest id handed out so far.
    pub(super) fn highest(&self) -> u32 {
        self.highest
    }

    fn handed_out(&self) -> usize {
        (self.highest - TEMPORARY_IDS) as usize
    }

    /// Called once per new lasting ref, before [`next`](Self::next): whether
    /// the table should look for refs of stopped actors now. Sweeps start
    /// once half the ids are handed out and none is free, and come at most
    /// once per `max / 16` new refs, so a sweep's walk over the table costs
    /// a bounded amount per new ref. A full table sweeps when a new ref
    /// needs an id, at most every [`FULL_SWEEP_PAUSE`].
    pub(super) fn wants_sweep(&mut self) -> bool {
        self.since_sweep += 1;
        self.promote();
        if !self.free.is_empty() {
            return false;
        }
        if self.handed_out() >= self.max {
            let now = Instant::now();
            let due = self
                .last_full_sweep
                .is_none_or(|at| now.duration_since(at) >= FULL_SWEEP_PAUSE);
            if due {
                self.last_full_sweep = Some(now);
            }
            return due;
        }
        self.handed_out() >= self.max / 2 && self.since_sweep >= (self.max / 16).max(1)
    }

    /// A sweep has run.
    pub(super) fn swept(&mut self) {
        self.since_sweep = 0;
    }

    /// Takes `id` back from `actor`, a local actor that has stopped.
    pub(super) fn release(&mut self, id: u32, actor: AnyRef) {
        self.released.push_back(Released {
            id,
            actor,
            load: self.loads,
        });
    }

    /// An id for a new lasting ref: a released one that is safe to reuse,
    /// else a new one; `None` when all `max` are in use.
    pub(super) fn next(&mut self) -> Option<u32> {
        self.promote();
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        if self.handed_out() >= self.max {
            return None;
        }
        self.highest += 1;
        Some(self.highest)
    }

    /// A writer took the lane's whole queue: the ids released before are
    /// safe to reuse, and their refs are let go of now rather than at the
    /// next new ref, which may never come.
    #[inline]
    pub(super) fn note_load(&mut self) {
        self.loads += 1;
        if !self.released.is_empty() {
            self.promote();
        }
    }

    /// How many released ids wait to be safe to reuse.
    pub(super) fn released_len(&self) -> usize {
        self.released.len()
    }

    /// Released ids with the refs they still name: a new connection declares
    /// them too, for the frames queued before their release.
    pub(super) fn released(&self) -> impl Iterator<Item = (u32, &AnyRef)> {
        self.released.iter().map(|r| (r.id, &r.actor))
    }

    fn promote(&mut self) {
        while self.released.front().is_some_and(|r| r.load < self.loads) {
            if let Some(r) = self.released.pop_front() {
                self.free.push(r.id);
            }
        }
    }
}
