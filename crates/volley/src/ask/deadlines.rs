//! The deadlines of asks that wait: one sweeper per system instead of a
//! timer per ask.
//!
//! Why not a tokio `Sleep` per ask: an ask that parks (every remote ask,
//! and a local one whose reply is slow) would register a timer entry in
//! tokio's wheel, locking a driver shard to insert it and again to remove
//! it, for a timeout that almost never fires: nearly every ask is answered
//! first. Here a parked ask pushes a weak reference to its exchange and its
//! deadline onto a shard of this table (one uncontended lock, no
//! allocation once the shard's vector has grown), and nothing happens when
//! the reply comes: the entry is left behind and swept out later.
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

#[derive(Default)]
struct Shard {
    entries: Vec<Entry>,
    /// The earliest deadline among `entries` (entries of ended asks
    /// included: at worst a scan comes early and finds nothing due).
    earliest: Option<Instant>,
    /// The size at which the shard is scanned even if nothing is due.
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

/// What a push asks the caller to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    Done,
    /// The sweeper is not running yet: start it.
    StartSweeper,
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
        let wake_sweeper = {
            let mut shard = lock(&self.shards[my_shard()]);
            if shard.closed {
                return Pushed::Closed;
            }
            shard.entries.push(Entry { deadline, exchange });
            if shard.earliest.is_none_or(|e| deadline < e) {
                shard.earliest = Some(deadline);
            }
            std::mem::take(&mut shard.sweeper_idle)
        };
        if wake_sweeper {
            self.wake.notify_one();
        }
        if self.sweeper_started.load(Ordering::Relaxed)
            || self.sweeper_started.swap(true, Ordering::AcqRel)
        {
            Pushed::Done
        } else {
            Pushed::StartSweeper
        }
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
            let scan =
                shard.earliest.is_some_and(|e| e <= now) || shard.entries.len() >= shard.scan_at;
            if scan {
                let mut earliest = None::<Instant>;
                shard.entries.retain(|entry| {
                    if !entry.is_held() {
                        return false;
                    }
                    if entry.deadline <= now {
                        due.push(entry.exchange.clone());
                        return false;
                    }
                    if earliest.is_none_or(|e| entry.deadline < e) {
                        earliest = Some(entry.deadline);
                    }
                    true
                });
                shard.earliest = earliest;
                shard.scan_at = (2 * shard.entries.len()).max(SCAN_FROM);
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
        if shards.iter().any(|s| !s.entries.is_empty()) {
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
            left.append(&mut shard.entries);
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
        self.shards.iter().map(|s| lock(s).entries.len()).sum()
    }
}

impl ActorSystem {
    /// Has the system's sweeper end `exchange` at `deadline` if it still
    /// waits then; false once the system has terminated.
    pub(crate) fn expire_at(&self, deadline: Instant, exchange: Weak<dyn Expire>) -> bool {
        let table = self.ask_deadlines();
        match table.push(deadline, exchange) {
            Pushed::Done => true,
            Pushed::StartSweeper => {
                let terminated = self.terminated_receiver();
                drop(
                    self.runtime_handle()
                        .spawn(sweeper(table.clone(), terminated)),
                );
                true
            }
            Pushed::Closed => false,
        }
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
        assert_eq!(
            table.push(t0 + Duration::from_millis(5), weak(&soon)),
            Pushed::StartSweeper
        );
        assert_eq!(
            table.push(t0 + Duration::from_secs(5), weak(&later)),
            Pushed::Done
        );
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
        assert_eq!(
            table.push(Instant::now() + Duration::from_secs(60), weak(&q)),
            Pushed::Closed
        );
        assert_eq!(q.ended(), None);
    }
}
