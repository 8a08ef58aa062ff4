//! The routee list that the router actor writes and every sender reads.
//!
//! Only the router actor changes the list: it builds a new immutable
//! [`Snapshot`], stores it behind an `RwLock`, and then bumps `generation`.
//! Senders do not take the lock per message: each thread keeps its own
//! [`Routees`] view of the router (the snapshot and the thread's place in
//! its round-robin rotation) in the router's per-thread storage (a
//! `ThreadLocal`: a lookup by thread id, typed, no search), and only reads
//! the `generation` atomic (a load, no write, so senders on different
//! cores do not bounce a cache line), taking the lock when the generation
//! moved.
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
//! A thread's view keeps the snapshot it last used (and so its routee refs)
//! until that thread routes again after a change, or the router's shared
//! state is dropped (with the router actor and every `RouterRef`). A view
//! stays with its router when its thread exits, and is taken over by the
//! next thread given the same thread id.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use thread_local::ThreadLocal;

use super::logic::{Logic, Routees, RoutingLogic, Snapshot};
use crate::actor_ref::ActorRef;
use crate::locks::{read, write};

/// State shared by a router actor, its routed refs and its [`RouterRef`]s.
///
/// [`RouterRef`]: super::RouterRef
pub(crate) struct RouterShared<M: Send + 'static> {
    pub(crate) logic: Arc<dyn RoutingLogic<M>>,
    /// The logic is [`RoundRobin`](super::RoundRobin): run it inline.
    pub(crate) round_robin: bool,
    current: RwLock<Arc<Snapshot<M>>>,
    generation: AtomicU64,
    /// The shared rotation: where each new thread's rotation starts, and
    /// the rotation of what the router actor routes itself.
    turns: AtomicUsize,
    /// Each sending thread's view of the routees, with its rotation.
    views: ThreadLocal<ThreadView<M>>,
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
            logic,
            round_robin,
            current: RwLock::new(Arc::new(empty)),
            generation: AtomicU64::new(0),
            turns: AtomicUsize::new(0),
            views: ThreadLocal::new(),
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

    /// Runs `f` on this thread's view of the current routees, refreshed
    /// first if the routees changed since its last use.
    #[inline(always)]
    pub(crate) fn with_routees<T, F: FnOnce(&Routees<M>) -> T>(&self, f: F) -> T {
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(view) = self.views.get() {
            if view.generation.get() == generation {
                // Fails only while this thread refreshes the view, which
                // never runs `f` meanwhile.
                if let Ok(routees) = view.routees.try_borrow() {
                    return f(&routees);
                }
            }
        }
        self.refresh_and_run(generation, f)
    }

    /// This thread has no view yet, or an old one: brings it up to date and
    /// runs `f` on it.
    #[cold]
    #[inline(never)]
    fn refresh_and_run<T, F: FnOnce(&Routees<M>) -> T>(&self, generation: u64, f: F) -> T {
        let view = self.views.get_or(|| ThreadView {
            generation: Cell::new(generation),
            routees: RefCell::new(Routees::new(
                self.current(),
                self.turns.fetch_add(1, Ordering::Relaxed),
            )),
        });
        if view.generation.get() != generation {
            let Ok(mut routees) = view.routees.try_borrow_mut() else {
                // A routee that is this router again, routing inside `f`
                // (only a group can hold its own routed ref).
                return f(&self.shared_view());
            };
            let old = routees.replace(self.current());
            view.generation.set(generation);
            drop(routees);
            // Dropped with the view released: it may hold the last ref to
            // a routee, and whatever that drops may route again.
            drop(old);
        }
        match view.routees.try_borrow() {
            Ok(routees) => f(&routees),
            Err(_) => f(&self.shared_view()),
        }
    }
}

/// One thread's view of a router's routees.
struct ThreadView<M: Send + 'static> {
    /// The generation `routees` is of.
    generation: Cell<u64>,
    routees: RefCell<Routees<M>>,
}
