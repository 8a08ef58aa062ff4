//! The pool's shared queue: where tasks submitted from outside the pool's
//! workers wait (top-level spawns, tells from tokio tasks and I/O threads).
//!
//! Why a ring with an overflow rather than crossbeam's `Injector` alone:
//! the `Injector` links blocks that the pushing thread allocates and the
//! worker that empties them frees. With a driver thread spawning and the
//! workers starting the actors, every block crossed threads, and glibc's
//! free of a block too large for the freeing thread's cache locked the
//! pusher's malloc arena: a futex wait and wake-up every few dozen
//! top-level spawns (docs/benchmarks.md, "What a top-level spawn wakes").
//! crossbeam's `ArrayQueue` is allocated once, when the pool starts, so
//! pushes and takes call no allocator. A full ring does not block or drop:
//! the task goes to an `Injector`, the overflow, which only a backlog
//! larger than the ring ever uses.
//!
//! Order and fairness: a push goes to the ring whenever it has room, so
//! a burst that overflowed does not keep later pushes off the ring. A
//! taker says which part it looks at first, and the workers alternate
//! (by their count of tasks run): with a backlog in both parts, both
//! move, so no task waits for ever, though the queue is not strictly
//! first in, first out across the two parts (nothing relies on that: a
//! cell is queued at most once at a time, and its messages keep their
//! order in its mailbox).
//!
//! No lost wake-up (`parking`): a push is one atomic operation on one of
//! the two parts, and `is_empty` looks at both, which is what the parking
//! protocol asks of a queue. `loom_tests` below model-check the two parts'
//! composition, and the parking protocol over it, with linearizable
//! stand-ins for crossbeam's two queues (`crate::util::sync`); crossbeam
//! model-checks its own.

use crossbeam_deque::Steal;

use crate::util::sync::{ArrayQueue, Injector};

/// Tasks the ring holds before pushes overflow: 64 KB of slots for
/// `Arc<dyn Runnable>`, allocated once per pool. A worker preempted for a
/// scheduler slice while a driver thread spawns leaves a backlog of a few
/// thousand; a larger one only costs the overflow's allocations again.
pub(crate) const RING_CAPACITY: usize = 4096;

/// At most this many tasks move from the shared queue to a worker's own
/// queue in one take, besides the one it runs (crossbeam's `Injector`
/// moves up to 32 in all): enough to amortise the look at the shared
/// queue, few enough that other workers find work there too.
const MAX_BATCH: usize = 31;

/// The shared queue of one pool: a ring allocated once, and an overflow
/// for when it is full.
pub(crate) struct SharedQueue<T> {
    ring: ArrayQueue<T>,
    overflow: Injector<T>,
}

impl<T> SharedQueue<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        SharedQueue {
            ring: ArrayQueue::new(capacity),
            overflow: Injector::new(),
        }
    }

    /// Queues `task`; never blocks, never drops it.
    #[inline]
    pub(crate) fn push(&self, task: T) {
        if let Err(task) = self.ring.push(task) {
            self.overflow.push(task);
        }
    }

    /// True when neither part holds a task.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.is_empty() && self.overflow.is_empty()
    }

    /// Takes one task to run, from the overflow first if `overflow_first`
    /// (callers alternate, so that a backlog in either part moves), and
    /// hands up to half of what else the ring holds (at most
    /// [`MAX_BATCH`]) to `keep`, the taker's own queue. `Retry` when a
    /// race with another taker lost the overflow's task: look again.
    #[inline]
    pub(crate) fn take(&self, overflow_first: bool, keep: impl FnMut(T)) -> Steal<T> {
        if overflow_first {
            match self.overflow.steal() {
                Steal::Empty => {}
                found => return found,
            }
            return self
                .take_from_ring(keep)
                .map_or(Steal::Empty, Steal::Success);
        }
        match self.take_from_ring(keep) {
            Some(task) => Steal::Success(task),
            None => self.overflow.steal(),
        }
    }

    #[inline]
    fn take_from_ring(&self, mut keep: impl FnMut(T)) -> Option<T> {
        let task = self.ring.pop()?;
        let extra = (self.ring.len() / 2).min(MAX_BATCH);
        for _ in 0..extra {
            match self.ring.pop() {
                Some(more) => keep(more),
                None => break,
            }
        }
        Some(task)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn take_all(queue: &SharedQueue<u32>) -> Vec<u32> {
        let mut taken = Vec::new();
        for turn in 0.. {
            match queue.take(turn % 2 == 1, |t| taken.push(t)) {
                Steal::Success(t) => taken.push(t),
                Steal::Retry => {}
                Steal::Empty if queue.is_empty() => return taken,
                Steal::Empty => {}
            }
        }
        unreachable!()
    }

    #[test]
    fn a_full_ring_overflows_and_nothing_is_lost() {
        let queue = SharedQueue::new(4);
        for i in 0..10 {
            queue.push(i);
        }
        assert!(!queue.is_empty());
        let mut taken = take_all(&queue);
        assert!(queue.is_empty());
        taken.sort_unstable();
        assert_eq!(taken, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn an_overflowed_task_is_taken_while_the_ring_refills() {
        let queue = SharedQueue::new(2);
        for i in 0..3 {
            queue.push(i); // 0 and 1 in the ring, 2 overflows
        }
        assert!(matches!(queue.take(false, |_| {}), Steal::Success(0)));
        queue.push(3); // the ring has room again: it goes there
        assert_eq!(queue.ring.len(), 2);
        // The next taker looks at the overflow first.
        assert!(matches!(queue.take(true, |_| {}), Steal::Success(2)));
        assert!(matches!(queue.take(true, |_| {}), Steal::Success(1)));
        assert!(matches!(queue.take(false, |_| {}), Steal::Success(3)));
        assert!(queue.is_empty());
        assert!(matches!(queue.take(true, |_| {}), Steal::Empty));
    }

    #[test]
    fn a_take_moves_half_the_ring_to_the_takers_queue() {
        let queue = SharedQueue::new(64);
        for i in 0..9 {
            queue.push(i);
        }
        let mut kept = Vec::new();
        assert!(matches!(
            queue.take(false, |t| kept.push(t)),
            Steal::Success(0)
        ));
        assert_eq!(kept, vec![1, 2, 3, 4]);
        assert_eq!(queue.ring.len(), 4);
    }
}

/// Model checks of the two parts' composition and of the parking protocol
/// over it; run as `util::sync` says. Loss shows as a missing task, a lost
/// wake-up as a deadlock.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::super::parking::Parking;
    use super::*;
    use crate::util::sync::{AtomicUsize, Ordering, Parker};
    use loom::sync::Arc;
    use loom::thread;

    /// A full ring of one, a pusher and a taker racing, and a last push:
    /// every task comes out once, whichever part it went through.
    #[test]
    fn loom_nothing_is_lost_through_the_overflow() {
        loom::model(|| {
            let queue = Arc::new(SharedQueue::new(1));
            queue.push(0u32);
            let pusher = {
                let queue = queue.clone();
                thread::spawn(move || queue.push(1))
            };
            let taker = {
                let queue = queue.clone();
                thread::spawn(move || {
                    let mut taken = Vec::new();
                    if let Steal::Success(t) = queue.take(false, |t| taken.push(t)) {
                        taken.push(t);
                    }
                    taken
                })
            };
            queue.push(2);
            pusher.join().unwrap();
            let mut taken = taker.join().unwrap();
            // Overflow first, then the ring: both orders run in the model.
            while let Steal::Success(t) = queue.take(true, |t| taken.push(t)) {
                taken.push(t);
            }
            assert!(queue.is_empty());
            taken.sort_unstable();
            assert_eq!(taken, vec![0, 1, 2]);
        });
    }

    /// One worker that parks when the queue looks empty, and a submitter
    /// whose second task overflows a ring of one: both tasks run, so the
    /// worker's re-check sees a task in either part.
    #[test]
    fn loom_no_lost_wake_up_when_a_task_overflows() {
        loom::model(|| {
            let parker = Parker::new();
            let parking = Arc::new(Parking::new(vec![parker.unparker().clone()]));
            let queue = Arc::new(SharedQueue::new(1));
            let done = Arc::new(AtomicUsize::new(0));
            let worker = {
                let (parking, queue, done) = (parking.clone(), queue.clone(), done.clone());
                thread::spawn(move || {
                    let mut turn = 0;
                    while done.load(Ordering::Relaxed) < 2 {
                        turn += 1;
                        match queue.take(turn % 2 == 0, |()| {
                            done.fetch_add(1, Ordering::Relaxed);
                        }) {
                            Steal::Success(()) => {
                                done.fetch_add(1, Ordering::Relaxed);
                            }
                            Steal::Retry => {}
                            Steal::Empty => parking.sleep(0, &parker, || !queue.is_empty()),
                        }
                    }
                })
            };
            for _ in 0..2 {
                queue.push(());
                parking.notify_one();
            }
            worker.join().unwrap();
            assert!(queue.is_empty());
        });
    }
}
