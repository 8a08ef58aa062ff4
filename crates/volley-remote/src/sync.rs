//! The primitives an outbound lane's write token is built from, switched to
//! loom's under the `loom-model` feature (as tokio does with its own `loom`
//! module, under a cfg).
//!
//! Why: the write token (`transport/outbound/lane/token.rs`) is a small lock-and-flag
//! protocol between senders, dispatcher threads and the lane's writer task,
//! where a missed wake-up strands messages and a second writer corrupts the
//! stream. Loom can check every interleaving of it, but only of code that
//! uses its primitives. Rather than check a copy, the lane takes its lock,
//! its atomics and its two wake-up mechanisms from here, so the models in
//! `transport/outbound/lane/loom_model.rs` run the production code.
//!
//! A normal build gets exactly what the lane used before: a spin lock whose
//! unlock is a plain store, std atomics, tokio's `Notify` and
//! `volley::batch_end`. Under loom:
//!
//! - `SpinLock` is loom's mutex (loom explores the same orders a spin lock
//!   allows, without the spinning);
//! - `Notify` holds at most one permit, as tokio's does when nobody waits;
//!   the model's writer task takes it with `take_permit`. Tokio may deliver
//!   a second notification as a spurious wake-up, this one coalesces it: the
//!   model assumes the fewer wake-ups, so what it proves holds for tokio;
//! - `batch_end` is a per-loom-thread copy of `volley::batch_end`'s contract
//!   (std thread locals are shared by all loom threads, which run on one OS
//!   thread): `defer` refuses off a dispatcher thread, and a model thread
//!   calls `run_pending` where a dispatcher's batch would end.
//!
//! A feature of this crate rather than the customary `--cfg loom`: flags in
//! `RUSTFLAGS` reach every crate in the build, so tokio would compile
//! without `tokio::net`, which the transport needs even where no model uses
//! it, and the whole dependency tree would be built once more. A feature
//! rebuilds this crate only. It is for the model check alone: a transport
//! built with it would run on loom's primitives.

pub(crate) use std::sync::atomic::Ordering;

#[cfg(not(feature = "loom-model"))]
pub(crate) use std::sync::atomic::AtomicBool;
#[cfg(not(feature = "loom-model"))]
pub(crate) use tokio::sync::Notify;
#[cfg(not(feature = "loom-model"))]
pub(crate) use volley::batch_end::defer;

/// A spin lock, as for mailboxes: its holders run for one encode or one
/// buffer swap, and its unlock is a plain store.
#[cfg(not(feature = "loom-model"))]
pub(crate) type SpinLock<T> = spin::mutex::SpinMutex<T, spin::relax::Yield>;
#[cfg(not(feature = "loom-model"))]
pub(crate) type SpinLockGuard<'a, T> = spin::mutex::SpinMutexGuard<'a, T>;

#[cfg(feature = "loom-model")]
pub(crate) use loom::sync::atomic::AtomicBool;
#[cfg(all(feature = "loom-model", test))]
pub(crate) use loom_impl::batch_end;
#[cfg(feature = "loom-model")]
pub(crate) use loom_impl::{batch_end::defer, Notify, SpinLock, SpinLockGuard};

#[cfg(feature = "loom-model")]
mod loom_impl {
    use std::future::poll_fn;
    use std::sync::PoisonError;
    use std::task::Poll;

    use super::{AtomicBool, Ordering};

    /// `spin::mutex::SpinMutex`'s API over loom's mutex.
    pub(crate) struct SpinLock<T>(loom::sync::Mutex<T>);
    pub(crate) type SpinLockGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> SpinLock<T> {
        pub(crate) fn new(value: T) -> Self {
            SpinLock(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> SpinLockGuard<'_, T> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// The writer task's wake-up: at most one stored permit.
    pub(crate) struct Notify {
        permit: AtomicBool,
    }

    impl Notify {
        pub(crate) fn new() -> Self {
            Notify {
                permit: AtomicBool::new(false),
            }
        }

        /// Release: what the notifier did before is visible to the task it
        /// wakes, as with tokio's `Notify`. A read-modify-write, as tokio's
        /// is: loom may order a plain store before a concurrent `take_permit`
        /// that already read the older value, and report a wake-up lost
        /// that no real execution loses.
        pub(crate) fn notify_one(&self) {
            self.permit.swap(true, Ordering::AcqRel);
        }

        /// Consumes the permit: the writer task was woken and now runs.
        pub(crate) fn take_permit(&self) -> bool {
            self.permit.swap(false, Ordering::AcqRel)
        }

        /// For `run_writer`, which compiles under loom but no model runs.
        pub(crate) async fn notified(&self) {
            poll_fn(|cx| {
                if self.take_permit() {
                    Poll::Ready(())
                } else {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
            .await;
        }
    }

    pub(crate) mod batch_end {
        use std::cell::{Cell, RefCell};
        use std::sync::Arc;

        use volley::batch_end::BatchEnd;

        loom::thread_local! {
            static ON_WORKER: Cell<bool> = Cell::new(false);
            static PENDING: RefCell<Vec<Arc<dyn BatchEnd>>> = RefCell::new(Vec::new());
        }

        /// `volley::batch_end::defer` for the current loom thread.
        pub(crate) fn defer(make: impl FnOnce() -> Arc<dyn BatchEnd>) -> bool {
            if !ON_WORKER.with(Cell::get) {
                return false;
            }
            PENDING.with(|p| p.borrow_mut().push(make()));
            true
        }

        /// Makes the current loom thread a dispatcher thread.
        #[cfg(test)]
        pub(crate) fn enter_worker() {
            ON_WORKER.with(|w| w.set(true));
        }

        /// The end of the current loom thread's batch: runs what it deferred.
        #[cfg(test)]
        pub(crate) fn run_pending() {
            let hooks = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
            for hook in hooks {
                hook.run();
            }
        }
    }
}
