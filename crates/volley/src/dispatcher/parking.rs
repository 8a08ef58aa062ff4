//! Parking idle workers without losing a wake-up.
//!
//! # The protocol
//! A worker that found no work registers as idle (its index on the idle
//! list, `sleeping` incremented, both under the list's lock), issues a
//! `SeqCst` fence, looks at every queue once more, and parks only if they
//! are all empty. A submitter makes its task visible (pushes it), issues a
//! `SeqCst` fence, and reads `sleeping`; if it is non-zero, it pops one
//! index off the list and unparks that worker.
//!
//! Why no wake-up is lost: the two fences are ordered one way or the other
//! in the single total order of `SeqCst` operations. If the submitter's
//! comes first, the push is visible to every load after the worker's fence,
//! so the worker's re-check finds the task and it does not park. If the
//! worker's comes first, the registration is visible to the submitter's
//! load after its own fence, so it sees `sleeping > 0` and wakes a worker.
//! (Both can happen; the cost is one spurious wake-up.) The fences, not the
//! queues' own orderings, carry the argument, so it holds for any queue whose
//! push and emptiness check are atomic operations, which is what the
//! work-stealing deques are.
//!
//! `sleeping` mirrors the idle list's length so that a submitter with no
//! sleeper (the common case under load) pays one fence and one load, not a
//! lock. It changes only under the list's lock, so a popped index and the
//! decrement go together: whoever pops an index owns waking that worker.
//! A worker that wakes without being popped (its re-check found work, or a
//! notifier's token from an earlier round was still pending) takes itself
//! off the list; a token left over makes a later `park` return at once,
//! which the worker's loop absorbs by looking for work again.
//!
//! `loom_tests` below model-check this very code (with loom's atomics,
//! mutex and a token parker from `crate::util::sync`).

use crate::util::sync::{fence, lock, AtomicUsize, Mutex, Ordering, Parker, Unparker};

/// The idle list of one pool and the wake-up logic around it.
pub(crate) struct Parking {
    idle: Mutex<Vec<usize>>,
    sleeping: AtomicUsize,
    unparkers: Vec<Unparker>,
}

impl Parking {
    /// `unparkers[i]` wakes worker `i`.
    pub(crate) fn new(unparkers: Vec<Unparker>) -> Self {
        Parking {
            idle: Mutex::new(Vec::with_capacity(unparkers.len())),
            sleeping: AtomicUsize::new(0),
            unparkers,
        }
    }

    /// Wakes one parked worker, if any. Call after the work is visible.
    #[inline]
    /// How many workers sleep now (a sample, for the metrics gauge).
    pub(crate) fn sleeping(&self) -> usize {
        self.sleeping.load(Ordering::Relaxed)
    }

    pub(crate) fn notify_one(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) == 0 {
            return;
        }
        let woken = {
            let mut idle = lock(&self.idle);
            let w = idle.pop();
            if w.is_some() {
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
            }
            w
        };
        if let Some(index) = woken {
            self.unparkers[index].unpark();
        }
    }

    /// Wakes every worker (shutdown), whether parked or not: a worker about
    /// to park then returns at once.
    pub(crate) fn unpark_all(&self) {
        for u in &self.unparkers {
            u.unpark();
        }
    }

    /// Parks worker `index` with `parker` until notified, unless `ready()`
    /// (which must look at every queue, and at anything else that should
    /// keep the worker up) finds a reason to stay awake once the worker is
    /// registered. Returns when the worker should look for work again.
    pub(crate) fn sleep(&self, index: usize, parker: &Parker, ready: impl FnOnce() -> bool) {
        {
            let mut idle = lock(&self.idle);
            idle.push(index);
            self.sleeping.fetch_add(1, Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        if !ready() {
            parker.park();
        }
        // Woken by a notifier, it popped us; otherwise (the re-check found
        // work, or a leftover token) we are still listed.
        self.leave_idle(index);
    }

    /// Takes `index` off the idle list if a notifier has not already.
    fn leave_idle(&self, index: usize) {
        let mut idle = lock(&self.idle);
        if let Some(pos) = idle.iter().position(|&i| i == index) {
            idle.swap_remove(pos);
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Model checks of the protocol above, run with
/// `RUSTFLAGS="--cfg loom" cargo test -p volley --release --lib loom`. A lost
/// wake-up shows as a deadlock: every worker parked with a task queued, and
/// nobody left to wake them.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;
    use loom::thread;

    /// A pool reduced to what the protocol sees. The queue is a count
    /// pushed with `Release` and read with `Acquire`, as the deques' indices
    /// are: nothing stronger, so the fences have to carry the argument.
    struct Pool {
        parking: Parking,
        queued: AtomicUsize,
        done: AtomicUsize,
        total: usize,
        /// Set once every task ran; the pool's `shutdown`.
        finished: AtomicBool,
    }

    impl Pool {
        fn new(parkers: &[Parker], total: usize) -> Arc<Self> {
            Arc::new(Pool {
                parking: Parking::new(parkers.iter().map(|p| p.unparker().clone()).collect()),
                queued: AtomicUsize::new(0),
                done: AtomicUsize::new(0),
                total,
                finished: AtomicBool::new(false),
            })
        }

        /// `Dispatcher::submit` from outside the pool.
        fn submit(&self) {
            self.queued.fetch_add(1, Ordering::Release);
            self.parking.notify_one();
        }

        fn take(&self) -> bool {
            let mut n = self.queued.load(Ordering::Acquire);
            while n > 0 {
                match self
                    .queued
                    .compare_exchange(n, n - 1, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return true,
                    Err(now) => n = now,
                }
            }
            false
        }

        /// `worker_main` without the spinning: run tasks, and park when
        /// there are none, until the pool is finished.
        fn worker(&self, index: usize, parker: Parker) {
            loop {
                if self.take() {
                    if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.total {
                        self.finished.store(true, Ordering::SeqCst);
                        self.parking.unpark_all();
                    }
                    continue;
                }
                if self.finished.load(Ordering::SeqCst) {
                    return;
                }
                self.parking.sleep(index, &parker, || {
                    self.queued.load(Ordering::Acquire) > 0 || self.finished.load(Ordering::SeqCst)
                });
            }
        }
    }

    fn start_workers(pool: &Arc<Pool>, parkers: Vec<Parker>) -> Vec<thread::JoinHandle<()>> {
        parkers
            .into_iter()
            .enumerate()
            .map(|(index, parker)| {
                let pool = pool.clone();
                thread::spawn(move || pool.worker(index, parker))
            })
            .collect()
    }

    /// One worker, two submitters on other threads: both tasks run.
    #[test]
    fn loom_one_worker_two_submitters() {
        loom::model(|| {
            let parkers = vec![Parker::new()];
            let pool = Pool::new(&parkers, 2);
            let workers = start_workers(&pool, parkers);
            let submitters: Vec<_> = (0..2)
                .map(|_| {
                    let pool = pool.clone();
                    thread::spawn(move || pool.submit())
                })
                .collect();
            for t in submitters.into_iter().chain(workers) {
                t.join().unwrap();
            }
            assert_eq!(pool.done.load(Ordering::Acquire), 2);
        });
    }

    /// Two workers, one task: whichever worker is woken (or stays up) runs
    /// it, and the idle list ends empty.
    #[test]
    fn loom_two_workers_one_task() {
        loom::model(|| {
            let parkers = vec![Parker::new(), Parker::new()];
            let pool = Pool::new(&parkers, 1);
            let workers = start_workers(&pool, parkers);
            pool.submit();
            for t in workers {
                t.join().unwrap();
            }
            assert_eq!(pool.done.load(Ordering::Acquire), 1);
            assert_eq!(pool.parking.sleeping.load(Ordering::SeqCst), 0);
            assert!(lock(&pool.parking.idle).is_empty());
        });
    }
}
