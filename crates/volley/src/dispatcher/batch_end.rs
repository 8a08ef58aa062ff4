//! Work postponed to the end of a dispatcher thread's batch of activations.
//!
//! Why: an actor that sends to a remote node appends the encoded message to
//! a connection's buffer, and somebody must then write that buffer to the
//! socket. Waking a separate writer thread for it costs a context switch per
//! batch, which on a 2-core machine is most of the price of a remote
//! message. Instead the transport registers a [`BatchEnd`] hook, and the
//! dispatcher thread runs it itself once it has run out of local work (or
//! after [`FLUSH_EVERY_ACTIVATIONS`] activations), so everything the
//! handlers of that batch sent goes out in one system call, written by a
//! thread that is already awake.
//!
//! Off a dispatcher thread (a tokio task, a plain thread) [`defer`] refuses
//! and the caller falls back to its own mechanism.
//!
//! A hook is code from outside the runtime running on a dispatcher thread,
//! so a panic in one is caught and logged: it must neither kill the thread
//! (stranding the actors queued on it) nor keep the other hooks of the batch
//! from running.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Work to run once the current dispatcher batch is over.
pub trait BatchEnd: Send + Sync + 'static {
    /// Runs the postponed work. Should not block: it runs on a dispatcher
    /// thread between actor activations. A panic is caught and logged as an
    /// error; the other hooks still run.
    fn run(&self);
}

/// At most this many activations run between a deferral and its hook, so a
/// worker that never runs dry still flushes regularly, and the next node
/// can start on the first messages while this worker produces the rest.
/// Picked by sweeping 1 to 16 with 10-client remote ping-pong
/// (docs/design-notes.md#batch-end-flush-interval).
pub const FLUSH_EVERY_ACTIVATIONS: u32 = 4;

thread_local! {
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
    static PENDING: RefCell<Vec<Arc<dyn BatchEnd>>> = const { RefCell::new(Vec::new()) };
    static SINCE_FIRST: Cell<u32> = const { Cell::new(0) };
}

/// Runs `make()`'s hook at the end of the current dispatcher batch; returns
/// false (and does not call `make`) when the calling thread is not a
/// dispatcher worker.
pub fn defer(make: impl FnOnce() -> Arc<dyn BatchEnd>) -> bool {
    if !ON_WORKER.with(Cell::get) {
        return false;
    }
    PENDING.with_borrow_mut(|p| p.push(make()));
    true
}

/// True on a dispatcher worker, or inside an activation.
pub(crate) fn on_worker() -> bool {
    ON_WORKER.with(Cell::get)
}

/// Marks the current thread as a dispatcher worker.
pub(crate) fn enter_worker() {
    ON_WORKER.with(|w| w.set(true));
}

/// One activation on a thread that is not a pool worker (the
/// application-runtime dispatcher): hooks may be deferred while it runs,
/// and run when it ends, on the same thread.
pub(crate) struct Activation(());

impl Activation {
    pub(crate) fn begin() -> Self {
        ON_WORKER.with(|w| w.set(true));
        Activation(())
    }
}

impl Drop for Activation {
    fn drop(&mut self) {
        run_pending();
        ON_WORKER.with(|w| w.set(false));
    }
}

/// Called after each activation: runs the hooks once enough activations
/// have passed since the first one was deferred.
#[inline]
pub(crate) fn after_activation() {
    let waiting = PENDING.with_borrow(|p| !p.is_empty());
    if !waiting {
        return;
    }
    let n = SINCE_FIRST.with(|s| {
        let n = s.get() + 1;
        s.set(n);
        n
    });
    if n >= FLUSH_EVERY_ACTIVATIONS {
        run_pending();
    }
}

/// Runs every deferred hook now (the worker found no more local work, or
/// it is shutting down).
pub(crate) fn run_pending() {
    SINCE_FIRST.with(|s| s.set(0));
    // Hooks may defer again while running (a flush that finds more data):
    // take the list first so the borrow is not held across `run`.
    let hooks = PENDING.with_borrow_mut(std::mem::take);
    if hooks.is_empty() {
        return;
    }
    for hook in &hooks {
        // No unwinding happens on the normal path, so the guard costs
        // nothing there.
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| hook.run())) {
            tracing::error!(
                "a batch-end hook panicked: {}",
                crate::util::panic::panic_text(&*payload)
            );
        }
    }
    // Give the (now empty) allocation back so the steady state allocates
    // nothing.
    let mut hooks = hooks;
    hooks.clear();
    PENDING.with_borrow_mut(|p| {
        if p.is_empty() {
            *p = hooks;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Count(AtomicU32);
    impl BatchEnd for Count {
        fn run(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn refused_off_a_worker_thread() {
        let mut made = false;
        assert!(!defer(|| {
            made = true;
            Arc::new(Count(AtomicU32::new(0)))
        }));
        assert!(!made);
    }

    #[test]
    fn an_activation_off_a_pool_takes_hooks_and_runs_them_when_it_ends() {
        std::thread::spawn(|| {
            let c = Arc::new(Count(AtomicU32::new(0)));
            {
                let _activation = Activation::begin();
                assert!(defer(|| c.clone()));
                assert_eq!(c.0.load(Ordering::SeqCst), 0, "not before it ends");
            }
            assert_eq!(c.0.load(Ordering::SeqCst), 1);
            // The thread is not a worker again once the activation ended.
            assert!(!defer(|| c.clone()));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn runs_after_the_activation_limit_or_when_asked() {
        std::thread::spawn(|| {
            enter_worker();
            let c = Arc::new(Count(AtomicU32::new(0)));
            assert!(defer(|| c.clone()));
            for _ in 0..FLUSH_EVERY_ACTIVATIONS - 1 {
                after_activation();
            }
            assert_eq!(c.0.load(Ordering::SeqCst), 0);
            after_activation();
            assert_eq!(c.0.load(Ordering::SeqCst), 1);
            assert!(defer(|| c.clone()));
            run_pending();
            assert_eq!(c.0.load(Ordering::SeqCst), 2);
            run_pending();
            assert_eq!(
                c.0.load(Ordering::SeqCst),
                2,
                "a hook runs once per deferral"
            );
        })
        .join()
        .unwrap();
    }
}
