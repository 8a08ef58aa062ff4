//! The deadlines of asks that wait: one sweeper per system instead of a
//! timer per ask.
//!
//! Why not a tokio `Sleep` per ask: an ask that parks (every remote ask,
//! and a local one whose reply is slow) would register a timer entry in
//! tokio's wheel, locking a driver shard to insert it and again to remove
//! it, for a timeout that almost never fires: nearly every ask is answered
//! first. Here a parked ask puts a weak reference to its exchange and its
//! deadline into a slot of a shard of this table (one uncontended lock, no
//! allocation once the shard has grown) and gets a [`Ticket`] back.
//!
//! An ask that waits in a future (`ActorRef::ask`) hands its ticket back
//! when it ends, which empties the slot at once. Leaving the entry behind
//! for a later scan, as before, kept each ended exchange's memory alive
//! until then (a weak reference keeps the allocation): thousands of them
//! were freed in a burst per scan, past the allocator's per-thread cache,
//! and the allocator's consolidation pass then showed in every remote ask's
//! profile. An ask with no future to end it (an actor's `ctx.ask`,
//! a callback) leaves its entry to the scans, which still drop entries of
//! ended asks.
//!
//! One task on the system's runtime does all the timing. It sleeps until
//! the earliest deadline it knows of, or one tick ([`TICK`]) at most, since
//! an ask registered meanwhile may be due sooner; so a timeout fires at its
//! deadline, or up to a tick later (Akka's scheduler ticks every 10 ms too).
//! When it wakes it scans a shard only if one of its deadlines is due, or
//! once the shard has doubled since its last scan: an entry whose ask has
//! ended is dropped by the next scan of its shard, so a shard holds at most
//! about twice its waiting asks, however long their timeouts. With no asks
//! waiting the task sleeps until the next one comes.
//!
//! When the system terminates (or its runtime drops the task), every ask
//! still waiting ends with `SystemTerminated`, and later ones are refused.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::system::actor_system::ActorSystem;
use crate::util::locks::lock;

/// The longest the sweeper sleeps while asks wait: how late a timeout can
/// fire when its ask registered after the sweeper went to sleep.
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// Shards, so that asking threads rarely share a lock.
const SHARDS: usize = 8;

/// A shard is scanned once it holds this many entries, or twice as many as
/// its last scan left, even if nothing is due.
const SCAN_FROM: usize = 256;

/// How a waiting exchange is ended by the sweeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// Its deadline passed.
    TimedOut,
    /// The system terminated.
    SystemTerminated,
}

/// An exchange the sweeper can end.
pub(crate) trait Expire: Send + Sync {
    /// Ends the exchange with `why` if it still waits; nothing otherwise.
    fn expire(&self, why: Expiry);
}

struct Entry {
    deadline: Instant,
    exchange: Weak<dyn Expire>,
}

impl Entry {
    /// Somebody still holds the exchange: one atomic load, no lock. An
    /// answered ask whose asker has not yet dropped its side stays until
    /// the next scan; only due entries are looked at more closely.
    fn is_held(&self) -> bool {
        self.exchange.strong_count() > 0
    }
}

/// One slot of a shard: its entry, if any, and how many times it was
/// emptied (a ticket names the generation it was given, so a ticket of an
/// emptied slot empties nothing else).
#[derive(Default)]
struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

/// Where an entry is: handed back by [`AskDeadlines::cancel`] to empty its
/// slot when the ask ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    shard: u8,
    slot: u32,
    generation: u32,
}

#[derive(Default)]
struct Shard {
    slots: Vec<Slot>,
    /// Empty slots, the latest emptied last (reused first).
    free: Vec<u32>,
    /// Slots holding an entry.
    held: usize,
    /// The earliest deadline among the entries (entries of ended asks
    /// included: at worst a scan comes early and finds nothing due).
    earliest: Option<Instant>,
    /// The number of entries at which the shard is scanned even if nothing
    /// is due.
    scan_at: usize,
    /// The sweeper waits for a push to this shard (set while all shards
    /// were empty).
    sweeper_idle: bool,
    /// The system terminated: no more entries.
    closed: bool,
}

/// The table of a system's waiting asks' deadlines.
pub(crate) struct AskDeadlines {
    shards: [Mutex<Shard>; SHARDS],
    /// Woken by the first push after the sweeper found every shard empty.
    wake: tokio::sync::Notify,
    sweeper_started: AtomicBool,
}

impl Shard {
    /// Puts `entry` into a free slot; returns the slot and its generation.
    fn insert(&mut self, entry: Entry) -> (u32, u32) {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[slot as usize];
        s.entry = Some(entry);
        self.held += 1;
        (slot, s.generation)
    }

    /// Empties `slot`, which holds an entry: a new generation for its next
    /// entry.
    fn empty(&mut self, slot: usize) -> Option<Entry> {
        let s = &mut self.slots[slot];
        let entry = s.entry.take()?;
        s.generation = s.generation.wrapping_add(1);
        self.free.push(slot as u32);
        self.held -= 1;
        Some(entry)
    }

    /// Empties the slots of ended asks and of asks due at `now` (those go
    /// into `due`); returns the earliest deadline left.
    fn scan(&mut self, now: Instant, due: &mut Vec<Weak<dyn Expire>>) -> Option<Instant> {
        let mut earliest = None::<Instant>;
        for slot in 0..self.slots.len() {
            let Some(entry) = &self.slots[slot].entry else {
                continue;
            };
            if entry.is_held() && entry.deadline > now {
                if earliest.is_none_or(|e| entry.deadline < e) {
                    earliest = Some(entry.deadline);
                }
                continue;
            }
            let entry = self.empty(slot).expect("the slot holds an entry");
            if entry.is_held() {
                due.push(entry.exchange);
            }
        }
        earliest
    }
}

/// What a push asks the caller to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Registered; the ticket empties the entry's slot.
    Done(Ticket),
    /// Registered, but the sweeper is not running yet: start it.
    StartSweeper(Ticket),
    /// The system has terminated: the ask cannot wait.
    Closed,
}

impl Default for AskDeadlines {
    fn default() -> Self {
        AskDeadlines {
            shards: std::array::from_fn(|_| {
                Mutex::new(Shard {
                    scan_at: SCAN_FROM,
                    ..Shard::default()
                })
            }),
            wake: tokio::sync::Notify::new(),
            sweeper_started: AtomicBool::new(false),
        }
    }
}

/// This thread's shard: threads are dealt shards in turn.
fn my_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.try_with(|s| *s).unwrap_or(0)
}

impl AskDeadlines {
    /// Registers `exchange`, which waits until `deadline`.
    pub(crate) fn push(&self, deadline: Instant, exchange: Weak<dyn Expire>) -> Pushed {
        let index = my_shard();
        let (ticket, wake_sweeper) = {
            let mut shard = lock(&self.shards[index]);
            if shard.closed {
                return Pushed::Closed;
            }
            let (slot, generation) = shard.insert(Entry { deadline, exchange });
            if shard.earliest.is_none_or(|e| deadline < e) {
                shard.earliest = Some(deadline);
            }
            let ticket = Ticket {
                shard: index as u8,
                slot,
                generation,
            };
            (ticket, std::mem::take(&mut shard.sweeper_idle))
        };
        if wake_sweeper {
            self.wake.notify_one();
        }
        if self.sweeper_started.load(Ordering::Relaxed)
            || self.sweeper_started.swap(true, Ordering::AcqRel)
        {
            Pushed::Done(ticket)
        } else {
            Pushed::StartSweeper(ticket)
        }
    }

    /// Empties the slot of `ticket` (its ask ended), unless the sweeper
    /// emptied it first. The exchange's memory is then freed as soon as
    /// the asker and the reply handle let go of it.
    pub(crate) fn cancel(&self, ticket: Ticket) {
        let entry = {
            let mut shard = lock(&self.shards[usize::from(ticket.shard)]);
            let slot = ticket.slot as usize;
            match shard.slots.get(slot) {
                Some(s) if s.generation == ticket.generation => shard.empty(slot),
                _ => None,
            }
        };
        // The weak reference is dropped outside the lock.
        drop(entry);
    }

    /// Ends the asks due at `now` and drops entries of ended asks where a
    /// scan is due. Returns when to sweep next: `None` when no entries are
    /// left, in which case every shard now wakes the sweeper on its next
    /// push.
    fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        for shard in &self.shards {
            let mut shard = lock(shard);
            let scan = shard.earliest.is_some_and(|e| e <= now) || shard.held >= shard.scan_at;
            if scan {
                let earliest = shard.scan(now, &mut due);
                shard.earliest = earliest;
                shard.scan_at = (2 * shard.held).max(SCAN_FROM);
            }
            if let Some(e) = shard.earliest {
                next = Some(next.map_or(e, |n| n.min(e)));
            }
        }
        // Woken outside the shard locks: waking runs the askers' wakers.
        for exchange in due {
            if let Some(exchange) = exchange.upgrade() {
                exchange.expire(Expiry::TimedOut);
            }
        }
        if next.is_none() && !self.park_if_empty() {
            // Entries came between the scan and the parking: sweep again
            // within a tick.
            return Some(now + TICK);
        }
        next
    }

    /// Marks every shard as waking the sweeper, if all are empty (with all
    /// locks held, so no push slips between the check and the marks).
    fn park_if_empty(&self) -> bool {
        let mut shards: Vec<_> = self.shards.iter().map(lock).collect();
        if shards.iter().any(|s| s.held > 0) {
            return false;
        }
        for shard in &mut shards {
            shard.sweeper_idle = true;
        }
        true
    }

    /// Refuses further entries and ends every waiting ask with
    /// `SystemTerminated`.
    fn close(&self) {
        let mut left = Vec::new();
        for shard in &self.shards {
            let mut shard = lock(shard);
            shard.closed = true;
            shard.earliest = None;
            for slot in 0..shard.slots.len() {
                left.extend(shard.empty(slot));
            }
        }
        for entry in left {
            if let Some(exchange) = entry.exchange.upgrade() {
                exchange.expire(Expiry::SystemTerminated);
            }
        }
    }

    /// The number of entries held, live or not (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).held).sum()
    }
}

impl ActorSystem {
    /// Has the system's sweeper end `exchange` at `deadline` if it still
    /// waits then; `None` once the system has terminated. The ticket,
    /// given back to [`ActorSystem::cancel_expiry`] when the ask ends,
    /// drops the entry at once; an entry never given back is dropped by a
    /// later scan.
    pub(crate) fn expire_at(
        &self,
        deadline: Instant,
        exchange: Weak<dyn Expire>,
    ) -> Option<Ticket> {
        let table = self.ask_deadlines();
        match table.push(deadline, exchange) {
            Pushed::Done(ticket) => Some(ticket),
            Pushed::StartSweeper(ticket) => {
                let terminated = self.terminated_receiver();
                drop(
                    self.runtime_handle()
                        .spawn(sweeper(table.clone(), terminated)),
                );
                Some(ticket)
            }
            Pushed::Closed => None,
        }
    }

    /// The ask of `ticket` ended: its deadline entry goes now.
    pub(crate) fn cancel_expiry(&self, ticket: Ticket) {
        self.ask_deadlines().cancel(ticket);
    }
}

/// Closes the table when the sweeper ends, however it ends (the system
/// terminated, or its runtime dropped the task).
struct CloseOnDrop(Arc<AskDeadlines>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The sweeper: runs on the system's runtime until `terminated` says so
/// (or its sender is gone).
pub(crate) async fn sweeper(
    table: Arc<AskDeadlines>,
    mut terminated: tokio::sync::watch::Receiver<bool>,
) {
    let table = CloseOnDrop(table);
    loop {
        let next = table.0.sweep(Instant::now());
        let wait = async {
            match next {
                Some(at) => {
                    let at = at.min(Instant::now() + TICK);
                    tokio::time::sleep_until(at.into()).await;
                }
                None => table.0.wake.notified().await,
            }
        };
        tokio::select! {
            _ = wait => {}
            _ = terminated.wait_for(|done| *done) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    /// An exchange that records how it was ended.
    #[derive(Default)]
    struct Probe(StdMutex<Option<Expiry>>);

    impl Expire for Probe {
        fn expire(&self, why: Expiry) {
            let mut ended = self.0.lock().unwrap();
            if ended.is_none() {
                *ended = Some(why);
            }
        }
    }

    impl Probe {
        fn ended(&self) -> Option<Expiry> {
            *self.0.lock().unwrap()
        }
    }

    fn weak(p: &Arc<Probe>) -> Weak<dyn Expire> {
        let weak: Weak<Probe> = Arc::downgrade(p);
        weak
    }

    #[test]
    fn due_asks_end_and_later_ones_wait() {
        let table = AskDeadlines::default();
        let t0 = Instant::now();
        let soon = Arc::new(Probe::default());
        let later = Arc::new(Probe::default());
        assert!(matches!(
            table.push(t0 + Duration::from_millis(5), weak(&soon)),
            Pushed::StartSweeper(_)
        ));
        assert!(matches!(
            table.push(t0 + Duration::from_secs(5), weak(&later)),
            Pushed::Done(_)
        ));
        // Nothing due yet: the next sweep is at the earliest deadline.
        assert_eq!(table.sweep(t0), Some(t0 + Duration::from_millis(5)));
        assert_eq!(soon.ended(), None);
        let next = table.sweep(t0 + Duration::from_millis(5));
        assert_eq!(soon.ended(), Some(Expiry::TimedOut));
        assert_eq!(later.ended(), None);
        assert_eq!(next, Some(t0 + Duration::from_secs(5)));
    }

    #[test]
    fn answered_asks_are_dropped_and_never_expired() {
        let table = AskDeadlines::default();
        let t0 = Instant::now();
        let answered = Arc::new(Probe::default());
        table.push(t0 + Duration::from_millis(1), weak(&answered));
        // The reply came first (the exchange ended some other way).
        *answered.0.lock().unwrap() = Some(Expiry::SystemTerminated);
        assert_eq!(table.sweep(t0 + Duration::from_secs(1)), None);
        assert_eq!(answered.ended(), Some(Expiry::SystemTerminated));
        assert_eq!(table.len(), 0);
    }

    /// Entries of ended asks with far deadlines do not pile up: a shard is
    /// scanned once it has doubled.
    #[test]
    fn ended_asks_with_long_timeouts_stay_bounded() {
        let table = AskDeadlines::default();
        let t0 = Instant::now();
        let waiting = Arc::new(Probe::default());
        table.push(t0 + Duration::from_secs(3600), weak(&waiting));
        for _ in 0..100_000 {
            let gone = Arc::new(Probe::default());
            table.push(t0 + Duration::from_secs(3600), weak(&gone));
            drop(gone);
            if table.len() >= 2 * SCAN_FROM {
                table.sweep(t0);
            }
            assert!(table.len() <= 2 * SCAN_FROM, "{} entries", table.len());
        }
        table.sweep(t0);
        assert_eq!(table.len(), 1, "only the waiting ask is left");
        assert_eq!(waiting.ended(), None);
    }

    fn ticket(pushed: Pushed) -> Ticket {
        match pushed {
            Pushed::Done(t) | Pushed::StartSweeper(t) => t,
            Pushed::Closed => panic!("the table is closed"),
        }
    }

    /// A cancelled entry is gone at once (its exchange's memory with it),
    /// and is never expired.
    #[test]
    fn a_cancelled_entry_is_dropped_at_once_and_never_expired() {
        let table = AskDeadlines::default();
        let t0 = Instant::now();
        let answered = Arc::new(Probe::default());
        let t = ticket(table.push(t0 + Duration::from_millis(1), weak(&answered)));
        assert_eq!(Arc::weak_count(&answered), 1);
        table.cancel(t);
        assert_eq!(
            Arc::weak_count(&answered),
            0,
            "the weak reference is dropped"
        );
        assert_eq!(table.len(), 0);
        assert_eq!(table.sweep(t0 + Duration::from_secs(1)), None);
        assert_eq!(answered.ended(), None);
    }

    /// A ticket whose slot was emptied (the ask timed out) and reused by
    /// another ask leaves that other ask's entry alone.
    #[test]
    fn a_stale_ticket_empties_nothing_else() {
        let table = AskDeadlines::default();
        let t0 = Instant::now();
        let first = Arc::new(Probe::default());
        let stale = ticket(table.push(t0 + Duration::from_millis(1), weak(&first)));
        table.sweep(t0 + Duration::from_millis(1));
        assert_eq!(first.ended(), Some(Expiry::TimedOut));
        let second = Arc::new(Probe::default());
        let fresh = ticket(table.push(t0 + Duration::from_millis(2), weak(&second)));
        assert_eq!(fresh.slot, stale.slot, "the slot is reused");
        table.cancel(stale);
        assert_eq!(table.len(), 1);
        table.sweep(t0 + Duration::from_millis(2));
        assert_eq!(second.ended(), Some(Expiry::TimedOut));
        // Cancelling twice, or after the sweep, is harmless.
        table.cancel(fresh);
        table.cancel(fresh);
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn an_empty_table_parks_the_sweeper_and_a_push_wakes_it() {
        let table = AskDeadlines::default();
        assert_eq!(table.sweep(Instant::now()), None);
        let p = Arc::new(Probe::default());
        table.push(Instant::now() + Duration::from_secs(1), weak(&p));
        // The push left a permit: this completes at once.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), table.wake.notified())
                .await
                .expect("the push woke the parked sweeper");
        });
    }

    #[test]
    fn closing_ends_waiting_asks_and_refuses_new_ones() {
        let table = AskDeadlines::default();
        let p = Arc::new(Probe::default());
        table.push(Instant::now() + Duration::from_secs(60), weak(&p));
        table.close();
        assert_eq!(p.ended(), Some(Expiry::SystemTerminated));
        let q = Arc::new(Probe::default());
        assert!(matches!(
            table.push(Instant::now() + Duration::from_secs(60), weak(&q)),
            Pushed::Closed
        ));
        assert_eq!(q.ended(), None);
    }
}
