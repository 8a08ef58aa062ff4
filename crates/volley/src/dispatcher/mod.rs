//! The dispatcher: a work-stealing pool of threads that runs actors.
//!
//! Why our own pool rather than one tokio task per actor: an actor here is
//! scheduled only when it has messages, and an activation handles up to
//! `throughput` messages in one go with no future, no waker and no
//! cross-thread hand-off. An actor woken by a peer running on the same
//! worker goes into that worker's "next" slot, which idle workers cannot
//! steal, so a ping-pong pair stays on one core with hot caches; everything
//! else is stealable. Why this rather than a tokio task per actor:
//! docs/design-notes.md#a-dispatcher-of-our-own. Futures and I/O still run on tokio.
//!
//! Sleeping follows the classic protocol: a worker that finds nothing spins a
//! little, then registers as idle, re-checks every queue, and parks. A
//! submitter pushes, then (after a SeqCst fence) looks at the idle count, so
//! either the sleeper sees the task or the submitter sees the sleeper. That
//! protocol is the one job of [`parking::Parking`], which is model-checked
//! with loom; the workers' deques are crossbeam's and are not. The shared
//! queue ([`shared_queue`]) is crossbeam's bounded ring with an overflow,
//! so that a spawn from outside the pool allocates nothing on the way in;
//! how it composes the two, and the parking protocol over it, are
//! model-checked too.
//!
//! Work a worker postpones to the end of its batch of activations (the
//! transport's socket writes) is [`batch_end`], public as `volley::batch_end`.

pub mod batch_end;
mod on_runtime;
mod parking;
mod shared_queue;
mod stats;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_deque::{Steal, Stealer, Worker};

use crate::settings::{DispatcherKind, DispatcherSettings};
use crate::util::sync::Parker;
pub(crate) use on_runtime::{capture_woken, run_captured};
use parking::Parking;
use shared_queue::SharedQueue;
pub(crate) use stats::Counts;
use stats::{PoolStats, WorkerStats};

/// Something the pool can run: an actor cell with work to do.
pub(crate) trait Runnable: Send + Sync + 'static {
    /// Runs one activation. The pool hands over its reference; the cell
    /// resubmits itself if it still has work. Returns how many envelopes
    /// it handled (for the metrics; a register, so free to return).
    fn run(self: Arc<Self>) -> usize;

    /// Messages waiting, for the metrics' sampled mailbox depth.
    fn depth_sample(&self) -> usize {
        0
    }
}

pub(crate) type Task = Arc<dyn Runnable>;

/// Spins between looks at the clock while idle; with
/// `idle_spin = "0s"` a worker parks after this many. A ping-pong partner
/// usually answers within a few microseconds, and a park/unpark pair costs
/// two system calls; on a VM, waking a halted CPU is slower still, which is
/// why the default spins longer (see
/// `DispatcherSettings::idle_spin`).
const SPINS_BEFORE_PARK: u32 = 64;

/// An idle spinner yields its CPU every this many spins (each spin is a look
/// at the queues, well under a microsecond). With more threads than cores a
/// spinner holds a CPU that a woken I/O thread or a preempted sender needs;
/// yielding often hands it over soon. Chosen against one yield per 64
/// spins by remote-latency and one-client remote-pingpong
/// (docs/design-notes.md#spins-per-yield).
const SPINS_PER_YIELD: u32 = 8;

/// How often (in tasks run) a worker looks at the shared queue before its
/// own: tokio uses 61 for the same reason.
const GLOBAL_QUEUE_INTERVAL: u32 = 31;

static NEXT_DISPATCHER_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The local queue of the pool worker running on this thread, if any.
    static LOCAL: RefCell<Option<(usize, Worker<Task>)>> = const { RefCell::new(None) };
    /// The task this worker runs next, which other workers cannot steal
    /// (tokio's "LIFO slot"): the actor just woken by the running one, so a
    /// ping-pong pair stays on one core instead of bouncing between two.
    static NEXT: RefCell<Option<Task>> = const { RefCell::new(None) };
}

/// After this many tasks in a row from the `NEXT` slot, the worker takes
/// from its queue again, so two actors messaging each other cannot starve
/// the rest.
const MAX_NEXT_IN_A_ROW: u32 = 16;

/// A named dispatcher: a pool of worker threads, or activations run as
/// tasks on a tokio runtime ([`on_runtime`]); cheap to clone.
#[derive(Clone)]
pub(crate) struct Dispatcher {
    pool: Arc<Pool>,
}

struct Pool {
    id: usize,
    name: String,
    throughput: usize,
    deadline: Option<Duration>,
    idle_spin: Option<Duration>,
    /// Tasks submitted from outside the workers (`shared_queue`).
    shared: SharedQueue<Task>,
    stealers: Vec<Stealer<Task>>,
    parking: Parking,
    shutdown: AtomicBool,
    /// Kept so the threads are not detached silently; they exit on shutdown.
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Set for the application-runtime kind, which has no threads: its
    /// activations are tasks on this runtime. A field of the pool rather
    /// than a second type behind an enum, so that the pool's hot path
    /// (`submit` from a worker, `throughput`) pays nothing for it.
    on_runtime: Option<on_runtime::OnRuntime>,
    /// `[metrics] enabled` on a pool: the workers' counts (`stats.rs`).
    stats: Option<PoolStats>,
}

impl Dispatcher {
    /// Starts the dispatcher `settings` describe: for a pool, its workers,
    /// which run inside `runtime`'s context so handlers can create tokio
    /// timers and spawn tasks directly; for the application-runtime kind,
    /// nothing to start: its activations are tasks on `runtime`.
    /// `metered_for` names the system when its metrics are on: a pool's
    /// workers then count what they do.
    pub(crate) fn start(
        name: &str,
        settings: &DispatcherSettings,
        runtime: Option<tokio::runtime::Handle>,
        metered_for: Option<&str>,
    ) -> std::io::Result<Self> {
        let on_runtime = match (settings.kind, &runtime) {
            (DispatcherKind::WorkStealing, _) => None,
            (DispatcherKind::AppRuntime, Some(handle)) => Some(on_runtime::OnRuntime::new(handle)),
            (DispatcherKind::AppRuntime, None) => {
                return Err(std::io::Error::other(format!(
                    "dispatcher {name:?} runs on a tokio runtime, and none was given"
                )))
            }
        };
        let threads = if on_runtime.is_some() {
            0
        } else {
            settings.effective_threads()
        };
        let workers: Vec<Worker<Task>> = (0..threads).map(|_| Worker::new_fifo()).collect();
        let parkers: Vec<Parker> = (0..threads).map(|_| Parker::new()).collect();
        let pool = Arc::new(Pool {
            id: NEXT_DISPATCHER_ID.fetch_add(1, Ordering::Relaxed),
            name: name.to_string(),
            throughput: settings.throughput.max(1),
            deadline: settings.throughput_deadline,
            idle_spin: (!settings.idle_spin.is_zero()).then_some(settings.idle_spin),
            shared: SharedQueue::new(shared_queue::RING_CAPACITY),
            stealers: workers.iter().map(Worker::stealer).collect(),
            parking: Parking::new(parkers.iter().map(|p| p.unparker().clone()).collect()),
            shutdown: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            stats: metered_for
                .filter(|_| threads > 0)
                .map(|system| PoolStats::new(threads, system, name)),
            on_runtime,
        });
        let mut handles = Vec::with_capacity(threads);
        for (index, (worker, parker)) in workers.into_iter().zip(parkers).enumerate() {
            let pool2 = pool.clone();
            let runtime = runtime.clone();
            let handle = std::thread::Builder::new()
                .name(format!("volley-{name}-{index}"))
                .spawn(move || {
                    let _context = runtime.as_ref().map(|rt| rt.enter());
                    worker_main(pool2, index, worker, parker)
                })?;
            handles.push(handle);
        }
        *crate::util::locks::lock(&pool.threads) = handles;
        Ok(Dispatcher { pool })
    }

    pub(crate) fn name(&self) -> &str {
        &self.pool.name
    }

    /// Workers parked for want of work; `None` for the app-runtime kind,
    /// which has no workers of its own.
    pub(crate) fn parked_workers(&self) -> Option<usize> {
        match self.pool.on_runtime {
            Some(_) => None,
            None => Some(self.pool.parking.sleeping()),
        }
    }

    /// The workers' counts so far, when the pool is metered.
    pub(crate) fn counts(&self) -> Option<Counts> {
        self.pool.stats.as_ref().map(PoolStats::sample)
    }

    #[inline]
    pub(crate) fn throughput(&self) -> usize {
        self.pool.throughput
    }

    #[inline]
    pub(crate) fn deadline(&self) -> Option<Duration> {
        self.pool.deadline
    }

    /// Queues a newly woken task: in the current worker's `NEXT` slot when
    /// called from one of this pool's workers (locality), else on the shared
    /// queue.
    #[inline]
    pub(crate) fn submit(&self, task: Task) {
        self.submit_inner(task, true);
    }

    /// Queues a task that yielded with work left: at the back of the
    /// worker's queue, behind everything else that is waiting, or of the
    /// shared queue if work submitted from outside waits there.
    #[inline]
    pub(crate) fn submit_yielded(&self, task: Task) {
        self.submit_inner(task, false);
    }

    #[inline]
    fn submit_inner(&self, task: Task, next: bool) {
        let pool = &*self.pool;
        // The task moves through every branch: cloning an `Arc` here would
        // cost two atomic operations per wake-up.
        let outcome = LOCAL.with_borrow(|local| match local {
            // A task that yielded goes behind the work already waiting in
            // the shared queue, not ahead of it in this worker's own queue
            // (which the worker pops first): otherwise an actor woken from
            // outside the pool would wait up to `GLOBAL_QUEUE_INTERVAL`
            // activations of a busy one (Pekko's DispatcherActorSpec,
            // "respect throughput deadline"; tests/pekko_dispatchers.rs).
            Some((id, _)) if *id == pool.id && !next && !pool.shared.is_empty() => Err(task),
            Some((id, worker)) if *id == pool.id => {
                let displaced = if next {
                    NEXT.with_borrow_mut(|slot| slot.replace(task))
                } else {
                    Some(task)
                };
                match displaced {
                    Some(t) => {
                        worker.push(t);
                        // A backlog is worth waking a sleeper for.
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
            _ => Err(task),
        });
        match outcome {
            Ok(false) => {}
            Ok(true) => pool.parking.notify_one(),
            // A dispatcher on a runtime has no workers, so its tasks always
            // come this way: the pool's own path pays nothing for it.
            Err(task) => match &pool.on_runtime {
                Some(runtime) => runtime.submit(task, next),
                None => {
                    pool.shared.push(task);
                    pool.parking.notify_one();
                }
            },
        }
    }

    /// True for a dispatcher that runs activations as tasks on a tokio
    /// runtime rather than on a pool of its own threads.
    #[inline]
    pub(crate) fn runs_on_runtime(&self) -> bool {
        self.pool.on_runtime.is_some()
    }

    /// Stops the workers once their queues are empty; does not wait for them.
    /// A dispatcher on a runtime has no workers: the runtime is not its.
    pub(crate) fn shutdown(&self) {
        self.pool.shutdown.store(true, Ordering::SeqCst);
        self.pool.parking.unpark_all();
    }
}

impl Pool {
    fn find_task(&self, index: usize, local: &Worker<Task>, tick: u32) -> Option<Task> {
        // Now and then look at the shared queue first: a busy actor that keeps
        // rescheduling itself locally must not starve outside submissions.
        if tick % GLOBAL_QUEUE_INTERVAL == 0 {
            if let Steal::Success(t) = self.shared.take(tick % 2 == 1, |t| local.push(t)) {
                return Some(t);
            }
        }
        if let Some(t) = local.pop() {
            return Some(t);
        }
        loop {
            let mut retry = false;
            // Workers alternate which part of the shared queue they look
            // at first, so that a backlog in either moves.
            match self.shared.take(tick % 2 == 1, |t| local.push(t)) {
                Steal::Success(t) => return Some(t),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let n = self.stealers.len();
            for offset in 1..n {
                match self.stealers[(index + offset) % n].steal_batch_and_pop(local) {
                    Steal::Success(t) => {
                        if let Some(stats) = &self.stats {
                            stats.workers[index].stolen();
                        }
                        return Some(t);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    fn has_work(&self) -> bool {
        !self.shared.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// Runs one activation, counted when the pool is metered: `stats` is
    /// the worker's slot, looked up once, so metrics off cost one branch.
    #[inline(always)]
    fn run(&self, stats: Option<&WorkerStats>, task: Task) {
        match stats {
            None => {
                task.run();
            }
            Some(stats) => {
                // The first activation is sampled too, so a quiet worker shows.
                if stats.activation() % stats::DEPTH_SAMPLE_EVERY == 1 {
                    self.sample_depth(&*task);
                }
                stats.handled(task.run());
            }
        }
        batch_end::after_activation();
    }

    #[cold]
    fn sample_depth(&self, task: &dyn Runnable) {
        if let Some(stats) = &self.stats {
            stats.mailbox_depth.record(task.depth_sample() as f64);
        }
    }
}

fn worker_main(pool: Arc<Pool>, index: usize, worker: Worker<Task>, parker: Parker) {
    LOCAL.with_borrow_mut(|l| *l = Some((pool.id, worker)));
    batch_end::enter_worker();
    let run_local = |f: &mut dyn FnMut(&Worker<Task>) -> Option<Task>| {
        LOCAL.with_borrow(|l| f(&l.as_ref().expect("worker queue installed").1))
    };
    let stats = pool.stats.as_ref().map(|s| &*s.workers[index]);
    let mut tick: u32 = 0;
    let mut next_in_a_row = 0;
    'outer: loop {
        tick = tick.wrapping_add(1);
        if let Some(task) = NEXT.with_borrow_mut(Option::take) {
            if next_in_a_row < MAX_NEXT_IN_A_ROW {
                next_in_a_row += 1;
                pool.run(stats, task);
                continue;
            }
            run_local(&mut |w| {
                w.push(task.clone());
                None
            });
        }
        next_in_a_row = 0;
        if let Some(task) = run_local(&mut |w| pool.find_task(index, w, tick)) {
            pool.run(stats, task);
            continue;
        }
        // Out of work: what the batch postponed (socket writes) goes now.
        batch_end::run_pending();
        let spin_until = pool.idle_spin.map(|d| std::time::Instant::now() + d);
        let mut spin: u32 = 0;
        if let Some(stats) = stats {
            stats.set_spinning(true);
        }
        loop {
            spin += 1;
            if spin % SPINS_PER_YIELD == SPINS_PER_YIELD / 2 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            if let Some(task) = run_local(&mut |w| pool.find_task(index, w, 1)) {
                if let Some(stats) = stats {
                    stats.set_spinning(false);
                }
                pool.run(stats, task);
                continue 'outer;
            }
            if spin % SPINS_BEFORE_PARK == 0
                && spin_until.is_none_or(|t| std::time::Instant::now() >= t)
            {
                break;
            }
        }
        if let Some(stats) = stats {
            stats.set_spinning(false);
        }
        if pool.shutdown.load(Ordering::SeqCst) {
            break;
        }
        pool.parking.sleep(index, &parker, || {
            pool.has_work() || pool.shutdown.load(Ordering::SeqCst)
        });
    }
    batch_end::run_pending();
    // Drop anything still queued here (cells are reference counted; dropping
    // a task only releases the reference).
    NEXT.with_borrow_mut(|n| *n = None);
    LOCAL.with_borrow_mut(|l| *l = None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::mpsc;

    struct CountDown {
        left: AtomicU64,
        done: Mutex<Option<mpsc::Sender<()>>>,
        dispatcher: Mutex<Option<Dispatcher>>,
    }

    impl Runnable for CountDown {
        fn run(self: Arc<Self>) -> usize {
            if self.left.fetch_sub(1, Ordering::SeqCst) == 1 {
                if let Some(tx) = self.done.lock().unwrap().take() {
                    tx.send(()).unwrap();
                }
            } else {
                let d = self.dispatcher.lock().unwrap().clone().unwrap();
                d.submit(self.clone());
            }
            1
        }
    }

    #[test]
    fn runs_resubmitted_tasks_to_completion() {
        let settings = DispatcherSettings {
            threads: 2,
            ..Default::default()
        };
        let d = Dispatcher::start("test", &settings, None, None).unwrap();
        let (tx, rx) = mpsc::channel();
        let task = Arc::new(CountDown {
            left: AtomicU64::new(10_000),
            done: Mutex::new(Some(tx)),
            dispatcher: Mutex::new(Some(d.clone())),
        });
        d.submit(task.clone());
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        *task.dispatcher.lock().unwrap() = None;
        d.shutdown();
    }
}
