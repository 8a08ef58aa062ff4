//! The synchronisation primitives of the lock-free protocols, swappable for
//! loom's (as tokio does it).
//!
//! Two protocols decide who runs what without a lock held across the
//! decision: the cell's scheduling bits (`actor::cell::queues`) and the dispatcher's
//! park/unpark (`dispatcher::parking`), with the pool's shared queue
//! (`dispatcher::shared_queue`). Their atomics, locks, parkers and queues come
//! from here. Built normally (`cfg(not(loom))`) these are the standard
//! library's types, the `spin` crate's mutex and crossbeam's parker, with no
//! wrapper in between; built with `RUSTFLAGS="--cfg loom"` they are loom's
//! mocks, so the loom tests model-check the production code itself rather
//! than a copy of it.
//!
//! crossbeam's queues are not built on loom: under `--cfg loom` the shared
//! queue's two parts are linearizable stand-ins (a loom mutex around a
//! `VecDeque`), so the models check how the dispatcher composes them, and
//! crossbeam checks its own.
//!
//! Only those protocols go through here. Everything else (statics,
//! counters for statistics, the system's own locks) keeps the standard
//! library's types: loom's need a running model, and a `static` cannot hold
//! one of them anyway. Under `--cfg loom` the rest of the crate still
//! compiles, but only the loom tests may run: an actor system built then
//! would touch loom objects outside a model and panic.
//!
//! To run the model checks (as `.ci/run` does):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p volley --release --lib loom_tests
//! ```
//!
//! A separate target directory keeps the normal build valid. A failing
//! model prints the interleaving's panic; `LOOM_LOG=trace` and
//! `LOOM_LOCATION=1` say where each thread was.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU8, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU8, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Locks a mutex of this module, ignoring poison (see `crate::util::locks`).
#[cfg(not(loom))]
pub(crate) use crate::util::locks::lock;

/// Locks a mutex of this module, ignoring poison (see `crate::util::locks`).
#[cfg(loom)]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(not(loom))]
pub(crate) use spin_impl::{SpinMutex, SpinMutexGuard};

#[cfg(not(loom))]
mod spin_impl {
    /// A spin lock whose unlock is a plain store. Waiters yield the thread
    /// rather than burn it, so a holder preempted inside its few
    /// instructions is not starved.
    pub(crate) type SpinMutex<T> = spin::mutex::SpinMutex<T, spin::relax::Yield>;
    pub(crate) type SpinMutexGuard<'a, T> = spin::mutex::SpinMutexGuard<'a, T>;
}

#[cfg(loom)]
pub(crate) use loom_spin::{SpinMutex, SpinMutexGuard};

#[cfg(loom)]
mod loom_spin {
    /// Loom cannot see a spin loop's atomics as a lock, and would explore
    /// every spin; its own mutex gives the same acquire-on-lock,
    /// release-on-unlock edges, which is all the protocols rely on.
    pub(crate) struct SpinMutex<T>(loom::sync::Mutex<T>);

    pub(crate) type SpinMutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> SpinMutex<T> {
        pub(crate) fn new(value: T) -> Self {
            SpinMutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> SpinMutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }
}

#[cfg(not(loom))]
pub(crate) use crossbeam_utils::sync::{Parker, Unparker};

#[cfg(loom)]
pub(crate) use loom_parker::{Parker, Unparker};

#[cfg(loom)]
mod loom_parker {
    use loom::sync::{Arc, Condvar, Mutex};

    /// A token parker with crossbeam's semantics: `unpark` makes one token
    /// available (tokens do not add up), and `park` consumes it, blocking
    /// until there is one. Crossbeam's never wakes without a token; neither
    /// does this one, so a model that passes does not lean on spurious
    /// wake-ups.
    pub(crate) struct Parker {
        unparker: Unparker,
    }

    #[derive(Clone)]
    pub(crate) struct Unparker {
        inner: Arc<Inner>,
    }

    struct Inner {
        token: Mutex<bool>,
        cv: Condvar,
    }

    impl Parker {
        pub(crate) fn new() -> Self {
            Parker {
                unparker: Unparker {
                    inner: Arc::new(Inner {
                        token: Mutex::new(false),
                        cv: Condvar::new(),
                    }),
                },
            }
        }

        pub(crate) fn unparker(&self) -> &Unparker {
            &self.unparker
        }

        pub(crate) fn park(&self) {
            let inner = &self.unparker.inner;
            let mut token = inner.token.lock().unwrap();
            while !*token {
                token = inner.cv.wait(token).unwrap();
            }
            *token = false;
        }
    }

    impl Unparker {
        pub(crate) fn unpark(&self) {
            *self.inner.token.lock().unwrap() = true;
            self.inner.cv.notify_one();
        }
    }
}

#[cfg(not(loom))]
pub(crate) use crossbeam_deque::Injector;
#[cfg(not(loom))]
pub(crate) use crossbeam_queue::ArrayQueue;

#[cfg(loom)]
pub(crate) use loom_queues::{ArrayQueue, Injector};

#[cfg(loom)]
mod loom_queues {
    use std::collections::VecDeque;

    use crossbeam_deque::Steal;
    use loom::sync::Mutex;

    /// crossbeam's bounded queue as the shared queue uses it: a push to a
    /// full queue hands the value back.
    pub(crate) struct ArrayQueue<T> {
        capacity: usize,
        items: Mutex<VecDeque<T>>,
    }

    impl<T> ArrayQueue<T> {
        pub(crate) fn new(capacity: usize) -> Self {
            ArrayQueue {
                capacity,
                items: Mutex::new(VecDeque::with_capacity(capacity)),
            }
        }

        pub(crate) fn push(&self, value: T) -> Result<(), T> {
            let mut items = super::lock(&self.items);
            if items.len() == self.capacity {
                return Err(value);
            }
            items.push_back(value);
            Ok(())
        }

        pub(crate) fn pop(&self) -> Option<T> {
            super::lock(&self.items).pop_front()
        }

        pub(crate) fn len(&self) -> usize {
            super::lock(&self.items).len()
        }

        pub(crate) fn is_empty(&self) -> bool {
            super::lock(&self.items).is_empty()
        }
    }

    /// crossbeam's unbounded injector as the shared queue uses it (its
    /// `steal` may also say `Retry`, which the callers loop on).
    pub(crate) struct Injector<T> {
        items: Mutex<VecDeque<T>>,
    }

    impl<T> Injector<T> {
        pub(crate) fn new() -> Self {
            Injector {
                items: Mutex::new(VecDeque::new()),
            }
        }

        pub(crate) fn push(&self, value: T) {
            super::lock(&self.items).push_back(value);
        }

        pub(crate) fn steal(&self) -> Steal<T> {
            match super::lock(&self.items).pop_front() {
                Some(value) => Steal::Success(value),
                None => Steal::Empty,
            }
        }

        pub(crate) fn is_empty(&self) -> bool {
            super::lock(&self.items).is_empty()
        }
    }
}
