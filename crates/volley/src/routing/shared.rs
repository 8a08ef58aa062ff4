//! The routee list that the router actor writes and every sender reads.
//!
//! Only the router actor changes the list: it builds a new immutable
//! [`Snapshot`], stores it behind an `RwLock`, and then bumps the
//! generation in `state`. Senders do not take the lock per message: each
//! thread keeps its own [`Routees`] view of the router (the snapshot and
//! the thread's place in its round-robin rotation) in the router's
//! per-thread storage (a `ThreadLocal`: a lookup by thread id, typed, no
//! search), and only read the `state` atomic (a load, no write, so senders
//! on different cores do not bounce a cache line), taking the lock when the
//! generation moved. The same word counts the messages that still have to
//! go through the router actor, so one load and one comparison with the
//! view's copy tell a sender that it may route on its side with its view.
//! Since the snapshot is stored before the generation is bumped, a sender
//! that sees generation `g` gets a snapshot at least as new as `g`; so once
//! a sender has observed a change (any way that synchronises with the
//! router actor), its next message sees the new list.
//!
//! A `RwLock` read per message would be slower, and slower still with more
//! sending threads: its reader count is a shared write that bounces between
//! the senders' cores. So would a shared round-robin counter, which is why
//! each thread's view keeps its own rotation. Routing figures are in
//! docs/benchmarks-remote.md#router.
//!
//! A thread's view keeps the snapshot it last used (and so its routee refs)
//! until that thread routes again after a change, or the router's shared
//! state is dropped (with the router actor and every `RouterRef`). A view
//! stays with its router when its thread exits, and is taken over by the
//! next thread given the same thread id.

use std::cell::{Cell, Ref, RefCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use crossbeam_utils::CachePadded;
use thread_local::ThreadLocal;

use super::logic::{Logic, Routees, RoutingLogic, Snapshot};
use crate::actor::actor_ref::ActorRef;
use crate::util::locks::{read, write};

/// One generation in [`RouterShared::state`]: its high 32 bits.
const GENERATION: u64 = 1 << 32;
/// The messages forwarded to the router actor and not routed yet: the low
/// 32 bits of [`RouterShared::state`] (a mailbox cannot hold 2^32 of them).
const FORWARDED: u64 = GENERATION - 1;

/// True when a message sent in `state` ([`RouterShared::state`]) must go
/// through the router actor.
#[inline(always)]
pub(crate) fn via_actor(state: u64) -> bool {
    state & FORWARDED != 0
}

/// State shared by a router actor, its routed refs and its [`RouterRef`]s.
///
/// [`RouterRef`]: super::RouterRef
pub(crate) struct RouterShared<M: Send + 'static> {
    pub(crate) logic: Arc<dyn RoutingLogic<M>>,
    /// The logic is [`RoundRobin`](super::RoundRobin): run it inline.
    pub(crate) round_robin: bool,
    current: RwLock<Arc<Snapshot<M>>>,
    /// The generation of `current` (high bits, [`GENERATION`]) and the
    /// count of messages that must still go through the router actor (low
    /// bits, [`FORWARDED`]). The count starts at 1 until the first routees
    /// exist, and counts messages forwarded to the actor that it has not
    /// routed yet, so that a sender never overtakes its own earlier
    /// messages by switching to the direct path. One word, so that a routed
    /// message checks both with one load and one comparison. (The
    /// generation wraps after 2^32 changes: a thread that routed nothing
    /// while exactly a multiple of that many happened would keep its old
    /// view.)
    state: AtomicU64,
    /// The shared rotation: where each new thread's rotation starts, and
    /// the rotation of what the router actor routes itself.
    turns: AtomicUsize,
    /// Each sending thread's view of the routees, with its rotation. On a
    /// cache line of its own: `ThreadLocal` keeps threads' entries side by
    /// side, and every routed message writes its view (the borrow and the
    /// rotation), so two senders' views on one line would bounce it
    /// between their cores on every message.
    views: ThreadLocal<CachePadded<ThreadView<M>>>,
}

impl<M: Send + 'static> RouterShared<M> {
    pub(crate) fn new(logic: Logic<M>) -> Self {
        let Logic { logic, round_robin } = logic;
        let empty = Snapshot::new(Vec::new(), &*logic, false);
        RouterShared {
            logic,
            round_robin,
            current: RwLock::new(Arc::new(empty)),
            state: AtomicU64::new(1),
            turns: AtomicUsize::new(0),
            views: ThreadLocal::new(),
        }
    }

    /// The current snapshot (takes the read lock; not for the per-message path).
    pub(crate) fn current(&self) -> Arc<Snapshot<M>> {
        read(&self.current).clone()
    }

    /// Replaces the routee list. Called by the router actor only.
    pub(crate) fn publish(&self, refs: Vec<ActorRef<M>>) {
        let snapshot = Arc::new(Snapshot::new(refs, &*self.logic, true));
        let old = {
            let mut current = write(&self.current);
            let old = std::mem::replace(&mut *current, snapshot);
            // Under the lock: whoever reads the new list (`routees()`) then
            // finds the new generation too, so a sender's cached view is
            // refreshed before its next message. Bumped after the lock, a
            // caller could see two routees and still route to the one its
            // view held (a test saw all ten messages go to one routee).
            self.state.fetch_add(GENERATION, Ordering::Release);
            old
        };
        // Dropped outside the lock: it may hold the last ref to a routee.
        drop(old);
    }

    /// The state a routed message starts from: see [`via_actor`]
    /// and [`RouterShared::with_routees`].
    #[inline(always)]
    pub(crate) fn state(&self) -> u64 {
        self.state.load(Ordering::Acquire)
    }

    /// Counts a message forwarded to the router actor; before it is sent,
    /// so that every sender that sees no count afterwards knows that all
    /// forwarded messages have been routed.
    pub(crate) fn forwarding(&self) {
        self.state.fetch_add(1, Ordering::AcqRel);
    }

    /// The router actor has routed a forwarded message (or, once, created
    /// its first routees).
    pub(crate) fn forwarded_routed(&self) {
        self.state.fetch_sub(1, Ordering::AcqRel);
    }

    /// Runs `f` on the current routees in the shared rotation: for what the
    /// router actor routes itself (messages forwarded to it, `Route`).
    pub(crate) fn with_shared_rotation<T>(&self, f: impl FnOnce(&Routees<M>) -> T) -> T {
        f(&self.shared_view())
    }

    fn shared_view(&self) -> Routees<M> {
        Routees::new(self.current(), self.turns.fetch_add(1, Ordering::Relaxed))
    }

    /// This thread's view of the routees, borrowed, if it is of `state`
    /// ([`RouterShared::state`]) and not in use already. A view is only
    /// ever of a state in which messages need not go through the router
    /// actor, so this is also the [`via_actor`] check.
    #[inline(always)]
    pub(crate) fn current_view(&self, state: u64) -> Option<Ref<'_, Routees<M>>> {
        let view = self.views.get()?;
        if view.state.get() != state {
            return None;
        }
        // Fails only while this thread refreshes the view, which never
        // routes meanwhile.
        view.routees.try_borrow().ok()
    }

    /// Runs `f` on this thread's view of the routees, refreshed first if
    /// they changed since its last use. `state` is [`RouterShared::state`],
    /// loaded by the caller, who has checked that it is not [`via_actor`].
    pub(crate) fn with_routees<T, F: FnOnce(&Routees<M>) -> T>(&self, state: u64, f: F) -> T {
        match self.current_view(state) {
            Some(routees) => f(&routees),
            None => self.refresh_and_run(state, f),
        }
    }

    /// This thread has no view yet, or an old one: brings it up to date and
    /// runs `f` on it.
    #[cold]
    #[inline(never)]
    fn refresh_and_run<T, F: FnOnce(&Routees<M>) -> T>(&self, state: u64, f: F) -> T {
        debug_assert!(!via_actor(state));
        let view = self.views.get_or(|| {
            CachePadded::new(ThreadView {
                state: Cell::new(state),
                routees: RefCell::new(Routees::new(
                    self.current(),
                    self.turns.fetch_add(1, Ordering::Relaxed),
                )),
            })
        });
        if view.state.get() != state {
            let Ok(mut routees) = view.routees.try_borrow_mut() else {
                // A routee that is this router again, routing inside `f`
                // (only a group can hold its own routed ref).
                return f(&self.shared_view());
            };
            let old = routees.replace(self.current());
            view.state.set(state);
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
    /// The [`RouterShared::state`] `routees` is of: never one with
    /// messages forwarded to the router actor.
    state: Cell<u64>,
    routees: RefCell<Routees<M>>,
}
