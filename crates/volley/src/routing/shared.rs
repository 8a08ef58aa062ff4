//! The routee list that the router actor writes and every sender reads.
//!
//! Only the router actor changes the list: it builds a new immutable
//! [`Routees`] snapshot, stores it behind an `RwLock`, and then bumps
//! `generation`. Senders do not take the lock per message: each thread keeps
//! a few `(router, generation, snapshot)` entries in a thread-local cache
//! and only reads the `generation` atomic (a load, no write, so senders on
//! different cores do not bounce a cache line), falling back to the lock
//! when the generation moved. Since the snapshot is stored before the
//! generation is bumped, a sender that sees generation `g` gets a snapshot
//! at least as new as `g`.
//!
//! A `RwLock` read per message would be slower, and slower still with more
//! sending threads: its reader count is a shared write that bounces between
//! the senders' cores. Routing figures are in docs/benchmarks-remote.md
//! ("router").
//!
//! A stale entry of a router that is gone keeps its snapshot (and so its
//! routee refs) in memory until the thread caches other routers or exits;
//! the cache holds at most `CACHE_SLOTS` entries per thread.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use super::logic::{Routees, RoutingLogic};
use crate::actor_ref::ActorRef;
use crate::cell::next_uid;
use crate::locks::{read, write};

const CACHE_SLOTS: usize = 8;

struct CacheEntry {
    router: u64,
    generation: u64,
    snapshot: Arc<dyn Any + Send + Sync>,
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
    current: RwLock<Arc<Routees<M>>>,
    generation: AtomicU64,
    /// Non-zero while messages must go through the router actor: it starts
    /// at 1 until the first routees exist, and counts messages forwarded to
    /// the actor that it has not routed yet, so that a sender never
    /// overtakes its own earlier messages by switching to the direct path.
    pub(crate) via_actor: AtomicUsize,
}

impl<M: Send + 'static> RouterShared<M> {
    pub(crate) fn new(logic: Arc<dyn RoutingLogic<M>>) -> Self {
        let empty = Routees::new(Vec::new(), &*logic, false);
        RouterShared {
            id: next_uid(),
            logic,
            current: RwLock::new(Arc::new(empty)),
            generation: AtomicU64::new(0),
            via_actor: AtomicUsize::new(1),
        }
    }

    /// The current snapshot (takes the read lock; not for the per-message path).
    pub(crate) fn current(&self) -> Arc<Routees<M>> {
        read(&self.current).clone()
    }

    /// Replaces the routee list. Called by the router actor only.
    pub(crate) fn publish(&self, refs: Vec<ActorRef<M>>) {
        let snapshot = Arc::new(Routees::new(refs, &*self.logic, true));
        *write(&self.current) = snapshot;
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Runs `f` on the current snapshot, from the thread-local cache when it
    /// is up to date.
    #[inline]
    pub(crate) fn with_routees<T>(&self, f: impl FnOnce(&Routees<M>) -> T) -> T {
        let generation = self.generation.load(Ordering::Acquire);
        let mut f = Some(f);
        let hit = CACHE
            .try_with(|cache| {
                // A routee that is itself a router re-enters here while the
                // cache is borrowed; shared borrows nest, refreshes wait.
                let cache = cache.try_borrow().ok()?;
                let entry = cache
                    .iter()
                    .find(|e| e.router == self.id && e.generation == generation)?;
                let routees = entry.snapshot.downcast_ref::<Routees<M>>()?;
                Some((f.take().expect("called once"))(routees))
            })
            .ok()
            .flatten();
        if let Some(out) = hit {
            return out;
        }
        let snapshot = self.current();
        self.remember(generation, &snapshot);
        (f.take().expect("not called on a miss"))(&snapshot)
    }

    fn remember(&self, generation: u64, snapshot: &Arc<Routees<M>>) {
        let _ = CACHE.try_with(|cache| {
            let Ok(mut cache) = cache.try_borrow_mut() else {
                return;
            };
            let entry = CacheEntry {
                router: self.id,
                generation,
                snapshot: snapshot.clone(),
            };
            if let Some(slot) = cache.iter_mut().find(|e| e.router == self.id) {
                *slot = entry;
                return;
            }
            if cache.len() == CACHE_SLOTS {
                // Evict the oldest entry; new ones go to the back.
                cache.remove(0);
            }
            cache.push(entry);
        });
    }
}
