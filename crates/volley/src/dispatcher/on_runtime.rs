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
//! The cost: one task spawn per activation, where a pool pushes onto a
//! deque. docs/benchmarks.md has the measurements and says when to pick
//! which kind.

use super::Task;
use crate::batch_end;

/// The runtime a dispatcher of the application-runtime kind spawns on;
/// the pool around it holds the name, `throughput` and deadline.
pub(super) struct OnRuntime {
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    pub(super) fn new(runtime: &tokio::runtime::Handle) -> Self {
        OnRuntime {
            runtime: runtime.clone(),
        }
    }

    /// Runs an actor as a task: a newly woken one (`next`) at once (spawned
    /// from a thread of the same runtime, tokio runs it next on that
    /// thread), one that yielded with work left behind the tasks that are
    /// ready now.
    pub(super) fn submit(&self, task: Task, next: bool) {
        // The join handle is not needed: the task reports nothing.
        if next {
            drop(self.runtime.spawn(async move { activate(task) }));
        } else {
            drop(self.runtime.spawn(async move {
                tokio::task::yield_now().await;
                activate(task);
            }));
        }
    }
}

/// One activation, with the batch-end hooks it deferred run after it.
fn activate(task: Task) {
    let _batch = batch_end::Activation::begin();
    // Not counted: the metrics' dispatcher counts are a pool's workers'.
    task.run();
}
