//! The routee list that the router actor writes and every sender reads.
//!
//! Only the router actor changes the list: it builds a new immutable
//! [`Snapshot`], stores it behind an `RwLock`, and then bumps `generation`.
//! Senders do not take the lock per message: each thread keeps its own
//! [`Routees`] view per router (the snapshot and the thread's place in its
//! round-robin rotation) in a thread-local cache, and only reads the
//! `generation` atomic (a load, no write, so senders on different cores do
//! not bounce a cache line), taking the lock when the generation moved.
//! Since the snapshot is stored before the generation is bumped, a sender
//! that sees generation `g` gets a snapshot at least as new as `g`; so once
//! a sender has observed a change (any way that synchronises with the
//! router actor), its next message sees the new list.
//!
//! A `RwLock` read per message would be slower, and slower still with more
//! sending threads: its reader count is a shared write that bounces between
//! the senders' cores. So would a shared round-robin counter, which is why
//! each thread's view keeps its own rotation. Routing figures are in
//! docs/benchmarks-remote.md ("router").
//!
//! A stale entry of a router that is gone keeps its snapshot (and so its
//! routee refs) in memory until the thread caches other routers or exits;
//! the cache holds at most `CACHE_SLOTS` entries per thread.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use super::logic::{Logic, Routees, RoutingLogic, Snapshot};
use crate::actor_ref::ActorRef;
use crate::cell::next_uid;
use crate::locks::{read, write};

const CACHE_SLOTS: usize = 8;

struct CacheEntry {
    router: u64,
    generation: u64,
    /// This thread's `Routees<M>` of that router (the router's id fixes `M`).
    routees: Box<dyn Any>,
}

thread_local! {
    static CACHE: RefCell<Vec<CacheEntry>> = const { RefCell::new(Vec::new()) };
}

/// State shared by a router actor, its routed refs and its [`RouterRef`]s.
///
/// [`RouterRef`]: super::RouterRef
pub(crate) struct RouterShared<M: Send + 'static> {
    id: u64,
    pub(crate) logic: Arc<dyn RoutingLogic<M>>,
    /// The logic is [`RoundRobin`](super::RoundRobin): run it inline.
    pub(crate) round_robin: bool,
    current: RwLock<Arc<Snapshot<M>>>,
    generation: AtomicU64,
    /// The shared rotation: where each new thread's rotation starts, and
    /// the rotation of what the router actor routes itself.
    turns: AtomicUsize,
    /// Non-zero while messages must go through the router actor: it starts
    /// at 1 until the first routees exist, and counts messages forwarded to
    /// the actor that it has not routed yet, so that a sender never
    /// overtakes its own earlier messages by switching to the direct path.
    pub(crate) via_actor: AtomicUsize,
}

impl<M: Send + 'static> RouterShared<M> {
    pub(crate) fn new(logic: Logic<M>) -> Self {
        let Logic { logic, round_robin } = logic;
        let empty = Snapshot::new(Vec::new(), &*logic, false);
        RouterShared {
            id: next_uid(),
            logic,
            round_robin,
            current: RwLock::new(Arc::new(empty)),
            generation: AtomicU64::new(0),
            turns: AtomicUsize::new(0),
            via_actor: AtomicUsize::new(1),
        }
    }

    /// The current snapshot (takes the read lock; not for the per-message path).
    pub(crate) fn current(&self) -> Arc<Snapshot<M>> {
        read(&self.current).clone()
    }

    /// Replaces the routee list. Called by the router actor only.
    pub(crate) fn publish(&self, refs: Vec<ActorRef<M>>) {
        let snapshot = Arc::new(Snapshot::new(refs, &*self.logic, true));
        let old = std::mem::replace(&mut *write(&self.current), snapshot);
        self.generation.fetch_add(1, Ordering::Release);
        // Dropped outside the lock: it may hold the last ref to a routee.
        drop(old);
    }

    /// Runs `f` on the current routees in the shared rotation: for what the
    /// router actor routes itself (messages forwarded to it, `Route`).
    pub(crate) fn with_shared_rotation<T>(&self, f: impl FnOnce(&Routees<M>) -> T) -> T {
        f(&self.shared_view())
    }

    fn shared_view(&self) -> Routees<M> {
        Routees::new(self.current(), self.turns.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs `f` on this thread's view of the current routees, from the
    /// thread-local cache when it is up to date.
    #[inline]
    pub(crate) fn with_routees<T, F: FnOnce(&Routees<M>) -> T>(&self, f: F) -> T {
        let generation = self.generation.load(Ordering::Acquire);
        match self.cached(generation, f) {
            Ok(out) => out,
            Err(f) => self.refresh_and_run(generation, f),
        }
    }

    /// `f` on the cached view if it is of `generation`; `f` back otherwise.
    #[inline]
    fn cached<T, F: FnOnce(&Routees<M>) -> T>(&self, generation: u64, f: F) -> Result<T, F> {
        let mut f = Some(f);
        let hit = CACHE
            .try_with(|cache| {
                // A routee that is itself a router re-enters here while the
                // cache is borrowed; shared borrows nest, refreshes wait.
                let cache = cache.try_borrow().ok()?;
                let entry = cache.iter().find(|e| e.router == self.id)?;
                if entry.generation != generation {
                    return None;
                }
                let routees = entry.routees.downcast_ref::<Routees<M>>()?;
                let f = f.take()?;
                Some(f(routees))
            })
            .ok()
            .flatten();
        match (hit, f) {
            (Some(out), _) => Ok(out),
            (None, Some(f)) => Err(f),
            (None, None) => unreachable!("f runs only when it returns a value"),
        }
    }

    /// The cache missed: brings this thread's view up to date and runs `f`
    /// on it (on a view in the shared rotation if the cache is unavailable:
    /// re-entered, or the thread is exiting).
    #[cold]
    #[inline(never)]
    fn refresh_and_run<T, F: FnOnce(&Routees<M>) -> T>(&self, generation: u64, f: F) -> T {
        let snapshot = self.current();
        // Whatever leaves the cache is dropped once it is released: an old
        // snapshot may hold the last ref to a routee, and whatever that
        // drops may route again.
        let mut old_snapshot = None;
        let mut evicted = None;
        let _ = CACHE.try_with(|cache| {
            let Ok(mut cache) = cache.try_borrow_mut() else {
                return;
            };
            if let Some(entry) = cache.iter_mut().find(|e| e.router == self.id) {
                if let Some(routees) = entry.routees.downcast_mut::<Routees<M>>() {
                    entry.generation = generation;
                    old_snapshot = Some(routees.replace(snapshot.clone()));
                }
                return;
            }
            if cache.len() == CACHE_SLOTS {
                // Evict the oldest entry; new ones go to the back.
                evicted = Some(cache.remove(0));
            }
            let turn = self.turns.fetch_add(1, Ordering::Relaxed);
            cache.push(CacheEntry {
                router: self.id,
                generation,
                routees: Box::new(Routees::new(snapshot.clone(), turn)),
            });
        });
        drop((old_snapshot, evicted));
        match self.cached(generation, f) {
            Ok(out) => out,
            Err(f) => f(&Routees::new(
                snapshot,
                self.turns.fetch_add(1, Ordering::Relaxed),
            )),
        }
    }
}
