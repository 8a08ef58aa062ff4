//! The application-runtime dispatcher: each activation is a task on a
//! tokio runtime (the application's, when the system was started with
//! `ActorSystem::with_runtime`), instead of a turn on a pool thread.
//!
//! Why: an application whose handlers (an HTTP server, a gRPC service)
//! run on tokio pays two cross-thread wake-ups per `ask` to an actor on a
//! pool: one to the pool, one back. With the actors on the same runtime
//! as the asking task, tokio runs the woken actor on the asker's thread
//! (its LIFO slot), and the reply wakes the asker there too: no thread
//! hand-off, as with actix, ractor or kameo.
//!
//! What stays the same: the cell's scheduling (an actor runs on one thread
//! at a time, handles up to `throughput` messages per activation, and
//! goes to the back of the queue when it yields with work left),
//! supervision, and every semantic the cell implements. Batch-end hooks
//! (remoting's socket writes) run at the end of each activation, since
//! there is no pool worker whose batch could span several.
//!
//! The cost of a task per activation is mostly its allocation: tokio's
//! task cells are cache-line aligned, and an aligned allocation is several
//! times the price of a plain one. So each thread that wakes actors of
//! this dispatcher keeps one long-lived task, its *runner*: a newly woken
//! actor is handed to the thread's runner when the runner is idle, which
//! wakes an existing task instead of creating one (on a runtime thread,
//! tokio runs it next on that thread, as it would a new task). When the
//! runner is busy, the activation becomes a task of its own, as before, so
//! that another worker can steal it: a runner never queues more than one
//! activation.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::Task;
use crate::dispatcher::batch_end;
use crate::util::locks::lock;

/// The runtime a dispatcher of the application-runtime kind spawns on;
/// the pool around it holds the name, `throughput` and deadline.
pub(super) struct OnRuntime {
    runtime: tokio::runtime::Handle,
    /// Names this dispatcher among the runners a thread keeps (an address
    /// could be reused by a later dispatcher).
    id: u64,
    /// Every runner started for this dispatcher: closed when it is
    /// dropped, so a runtime that outlives the actor system keeps no
    /// waiting tasks of it.
    runners: Mutex<Vec<Arc<Runner>>>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's runners, one per application-runtime dispatcher it
    /// has woken actors of (a handful at most).
    static RUNNERS: RefCell<Vec<(u64, Arc<Runner>)>> = const { RefCell::new(Vec::new()) };
    /// While `Some`, the first activation woken on this thread is kept
    /// here for the caller of [`capture_woken`] instead of being handed to
    /// a runner.
    static CAPTURE: RefCell<Option<Option<Task>>> = const { RefCell::new(None) };
    /// The dispatcher whose activations this thread ran last: a thread of
    /// its runtime. Only there may a captured activation run: an actor's
    /// handler may rely on its runtime's context (`tokio::spawn`).
    static RUNS_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Notes that this thread runs activations of dispatcher `id`.
fn runs_here(id: u64) {
    let _ = RUNS_HERE.try_with(|r| r.set(id));
}

/// Calls `f` (a tell from an `ask`), keeping the activation it wakes, if it
/// wakes one on this dispatcher kind, for the caller to run with
/// [`run_captured`] on this thread at once.
///
/// Why: the asker would otherwise yield so that this thread's runner runs
/// the actor, and tokio answers a task's yield by waking a sibling worker
/// (microseconds on a VM: the ask's p99). Running the activation in the
/// asker's poll is what the runner would do on the same thread a moment
/// later, without the yield and without waking the runner.
pub(crate) fn capture_woken<R>(f: impl FnOnce() -> R) -> (R, Option<Task>) {
    let armed = CAPTURE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            if c.is_some() {
                // Inside another capture: its slot is left alone.
                return false;
            }
            *c = Some(None);
            true
        })
        .unwrap_or(false);
    if !armed {
        return (f(), None);
    }
    let disarm = Disarm;
    let out = f();
    std::mem::forget(disarm);
    (out, take_captured())
}

/// Ends a capture, returning what it kept.
fn take_captured() -> Option<Task> {
    CAPTURE
        .try_with(|c| c.borrow_mut().take().flatten())
        .ok()
        .flatten()
}

/// Ends a capture whose tell unwound: an activation it kept runs here
/// rather than being lost (the actor's own failures are caught inside).
struct Disarm;

impl Drop for Disarm {
    fn drop(&mut self) {
        if let Some(task) = take_captured() {
            activate(task);
        }
    }
}

/// Runs an activation [`capture_woken`] kept.
pub(crate) fn run_captured(task: Task) {
    activate(task);
}

/// Keeps `task` for [`capture_woken`]'s caller if one waits for it on this
/// thread, a thread of dispatcher `id`'s runtime; gives it back otherwise.
fn keep_for_capture(task: Task, id: u64) -> Result<(), Task> {
    if RUNS_HERE.try_with(|r| r.get() != id).unwrap_or(true) {
        return Err(task);
    }
    let mut task = Some(task);
    let _ = CAPTURE.try_with(|c| {
        if let Some(slot @ None) = c.borrow_mut().as_mut() {
            *slot = task.take();
        }
    });
    match task {
        None => Ok(()),
        Some(task) => Err(task),
    }
}

impl OnRuntime {
    pub(super) fn new(runtime: &tokio::runtime::Handle) -> Self {
        OnRuntime {
            runtime: runtime.clone(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            runners: Mutex::new(Vec::new()),
        }
    }

    /// Runs an actor as a task: a newly woken one (`next`) at once (woken
    /// or spawned from a thread of the same runtime, tokio runs it next on
    /// that thread), one that yielded with work left behind the tasks that
    /// are ready now.
    pub(super) fn submit(&self, task: Task, next: bool) {
        let id = self.id;
        if !next {
            drop(self.runtime.spawn(async move {
                tokio::task::yield_now().await;
                runs_here(id);
                activate(task);
            }));
            return;
        }
        let task = match keep_for_capture(task, id) {
            Ok(()) => return,
            Err(task) => task,
        };
        let task = match self.runner() {
            Some(runner) => match runner.hand(task) {
                Ok(()) => return,
                Err(task) => task,
            },
            None => task,
        };
        // The join handle is not needed: the task reports nothing.
        drop(self.runtime.spawn(async move {
            runs_here(id);
            activate(task)
        }));
    }

    /// This thread's runner for this dispatcher, started on first use;
    /// `None` on a thread being torn down, which has no thread-locals left.
    fn runner(&self) -> Option<Arc<Runner>> {
        RUNNERS
            .try_with(|runners| {
                let mut runners = runners.borrow_mut();
                if let Some((_, runner)) = runners.iter().find(|(id, _)| *id == self.id) {
                    return runner.clone();
                }
                // Those of dispatchers that are gone go when a new one comes.
                runners.retain(|(_, r)| !r.is_closed());
                let runner = self.start_runner();
                runners.push((self.id, runner.clone()));
                runner
            })
            .ok()
    }

    fn start_runner(&self) -> Arc<Runner> {
        let runner = Arc::new(Runner {
            dispatcher: self.id,
            ..Runner::default()
        });
        lock(&self.runners).push(runner.clone());
        drop(self.runtime.spawn(Running(runner.clone())));
        runner
    }
}

impl Drop for OnRuntime {
    fn drop(&mut self) {
        for runner in lock(&self.runners).drain(..) {
            runner.close();
        }
    }
}

/// One activation, with the batch-end hooks it deferred run after it.
fn activate(task: Task) {
    let _batch = batch_end::Activation::begin();
    // Not counted: the metrics' dispatcher counts are a pool's workers'.
    task.run();
}

/// A long-lived task that runs the activations handed to it, one at a time.
#[derive(Default)]
struct Runner {
    state: Mutex<RunnerState>,
    /// Its dispatcher's id.
    dispatcher: u64,
}

#[derive(Default)]
struct RunnerState {
    /// The activation handed over and not started yet.
    next: Option<Task>,
    /// Set while the runner waits for work: who to wake.
    waker: Option<Waker>,
    /// Its dispatcher is gone: the task ends, and nothing is handed over.
    closed: bool,
}

impl Runner {
    /// Hands `task` to the runner if it waits for work; gives it back if
    /// the runner is busy (running an activation, or woken and not yet
    /// polled).
    fn hand(&self, task: Task) -> Result<(), Task> {
        let waker = {
            let mut st = lock(&self.state);
            if st.closed {
                return Err(task);
            }
            let Some(waker) = st.waker.take() else {
                return Err(task);
            };
            st.next = Some(task);
            waker
        };
        waker.wake();
        Ok(())
    }

    fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Ends the runner's task.
    fn close(&self) {
        let (waker, _unstarted) = {
            let mut st = lock(&self.state);
            st.closed = true;
            (st.waker.take(), st.next.take())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The runner's task. Dropped with the runtime; an activation it was handed
/// and did not start is dropped with it, as a spawned task would be.
struct Running(Arc<Runner>);

impl Future for Running {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let task = {
            let mut st = lock(&self.0.state);
            if st.closed {
                return Poll::Ready(());
            }
            match st.next.take() {
                Some(task) => task,
                None => {
                    st.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
        };
        runs_here(self.0.dispatcher);
        activate(task);
        // Back to waiting: registered at once, so the next hand-over does
        // not have to wait for another poll.
        let mut st = lock(&self.0.state);
        if st.closed {
            return Poll::Ready(());
        }
        // Nothing was handed over meanwhile: `hand` needs the waker, which
        // was taken for this activation.
        debug_assert!(st.next.is_none());
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{channel, Sender};
    use std::time::Duration;

    use super::*;
    use crate::dispatcher::Runnable;

    /// Calls `f` as its activation.
    struct Call<F>(Mutex<Option<F>>);

    impl<F: FnOnce() + Send + 'static> Runnable for Call<F> {
        fn run(self: Arc<Self>) -> usize {
            if let Some(f) = lock(&self.0).take() {
                f();
            }
            1
        }
    }

    fn call(f: impl FnOnce() + Send + 'static) -> Task {
        Arc::new(Call(Mutex::new(Some(f))))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    fn done(tx: &Sender<u32>, i: u32) -> Task {
        let tx = tx.clone();
        call(move || tx.send(i).unwrap())
    }

    #[test]
    fn woken_actors_reuse_a_runner_per_thread_which_ends_with_the_dispatcher() {
        let rt = runtime();
        let on = Arc::new(OnRuntime::new(rt.handle()));
        let (tx, rx) = channel();
        let submitter = on.clone();
        rt.block_on(async move {
            tokio::spawn(async move {
                for i in 0..1000 {
                    submitter.submit(done(&tx, i), true);
                    // One at a time: the runner is idle again for the next.
                    tokio::task::yield_now().await;
                }
            })
            .await
            .unwrap();
        });
        let got: Vec<u32> = (0..1000)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(got.len(), 1000);
        let runners = lock(&on.runners).len();
        assert!(
            (1..=2).contains(&runners),
            "{runners} runners for 2 threads"
        );
        // A task that ran an activation beside a busy runner is gone
        // shortly after its message.
        let alive_at_most = |n: usize, what: &str| {
            let start = std::time::Instant::now();
            while rt.metrics().num_alive_tasks() > n {
                assert!(start.elapsed() < Duration::from_secs(10), "{what}");
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        alive_at_most(runners, "tasks other than the runners stayed");
        assert_eq!(
            rt.metrics().num_alive_tasks(),
            runners,
            "the runners live on"
        );
        drop(on);
        alive_at_most(0, "the runners never ended");
    }

    #[test]
    fn a_runner_takes_one_activation_and_only_while_it_waits() {
        let runner = Runner::default();
        let noop = || call(|| ());
        // Woken and not yet polled, or running: busy.
        assert!(runner.hand(noop()).is_err());
        lock(&runner.state).waker = Some(Waker::noop().clone());
        assert!(runner.hand(noop()).is_ok());
        // The one handed over has not started: the next becomes a task.
        assert!(runner.hand(noop()).is_err());
        lock(&runner.state).next = None;
        lock(&runner.state).waker = Some(Waker::noop().clone());
        runner.close();
        assert!(runner.is_closed());
        assert!(
            runner.hand(noop()).is_err(),
            "a closed runner takes nothing"
        );
    }

    /// A capture keeps what the tell wakes only on a thread of the
    /// dispatcher's runtime; a nested capture leaves the outer one's slot
    /// alone; a tell that unwinds still runs what it woke.
    #[test]
    fn captures_keep_the_woken_activation_only_where_they_may() {
        let rt = runtime();
        let on = OnRuntime::new(rt.handle());
        let (tx, rx) = channel();
        // Not (yet) a thread of the runtime: handed on, not kept.
        let ((), kept) = capture_woken(|| on.submit(done(&tx, 1), true));
        assert!(kept.is_none());
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
        runs_here(on.id);
        let ((), kept) = capture_woken(|| on.submit(done(&tx, 2), true));
        run_captured(kept.expect("kept for the asker"));
        assert_eq!(rx.try_recv().unwrap(), 2);
        let (inner, outer) = capture_woken(|| {
            let ((), inner) = capture_woken(|| on.submit(done(&tx, 3), true));
            inner.is_some()
        });
        assert!(!inner, "the inner capture kept nothing");
        run_captured(outer.expect("the outer capture kept it"));
        assert_eq!(rx.try_recv().unwrap(), 3);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            capture_woken(|| {
                on.submit(done(&tx, 4), true);
                panic!("a tell that unwinds");
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(rx.try_recv().unwrap(), 4, "run while unwinding");
        runs_here(0);
    }
}
