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

use std::time::Duration;

use super::Task;
use crate::batch_end;
use crate::settings::DispatcherSettings;

pub(super) struct OnRuntime {
    pub(super) name: String,
    pub(super) throughput: usize,
    pub(super) deadline: Option<Duration>,
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    pub(super) fn new(
        name: &str,
        settings: &DispatcherSettings,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        OnRuntime {
            name: name.to_string(),
            throughput: settings.throughput.max(1),
            deadline: settings.throughput_deadline(),
            runtime,
        }
    }

    /// Runs a newly woken actor as a task. Spawned from a thread of the
    /// same runtime, tokio runs it next on that thread.
    #[inline]
    pub(super) fn submit(&self, task: Task) {
        // The join handle is not needed: the task reports nothing.
        drop(self.runtime.spawn(async move { activate(task) }));
    }

    /// Runs an actor that yielded with work left, behind the tasks that
    /// are ready now.
    pub(super) fn submit_yielded(&self, task: Task) {
        drop(self.runtime.spawn(async move {
            tokio::task::yield_now().await;
            activate(task);
        }));
    }
}

/// One activation, with the batch-end hooks it deferred run after it.
fn activate(task: Task) {
    let _batch = batch_end::Activation::begin();
    task.run();
}
