//! Coordinated shutdown (Akka's CoordinatedShutdown): named phases run in
//! order before the actors stop, each bounded by a timeout, so services can
//! unbind and finish in-flight requests while the actors still run; then
//! the actors drain what is queued for them and stop, top-down.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::system::actor_system::ActorSystem;
use crate::util::locks::lock;

/// Akka's default phases, in the order they run. `cluster-*` are
/// volley-cluster's (a member leaves gracefully there) and run empty on a
/// node in no cluster.
/// `actor-system-terminate` is where the actors drain and stop; its tasks
/// are the shutdown hooks (`ActorSystem::add_shutdown_hook`), which run
/// after the last actor has stopped. Remoting flushes and leaves there, as
/// a hook, so that what the actors send while they drain and the death
/// notices of their stops go out first.
pub const PHASES: &[&str] = &[
    "before-service-unbind",
    "service-unbind",
    "service-requests-done",
    "service-stop",
    "before-cluster-shutdown",
    "cluster-sharding-shutdown-region",
    "cluster-leave",
    "cluster-exiting",
    "cluster-exiting-done",
    "cluster-shutdown",
    "before-actor-system-terminate",
    ACTOR_SYSTEM_TERMINATE,
];

/// The last phase: the actors stop, then the shutdown hooks run.
pub const ACTOR_SYSTEM_TERMINATE: &str = "actor-system-terminate";

/// Why the system shuts down; published as [`ShutdownStarted`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShutdownReason {
    /// `ActorSystem::terminate` was called.
    Terminate,
    /// The process got SIGTERM (`Settings::shutdown_on_sigterm`).
    Sigterm,
    /// The user guardian (`/user`) was stopped: as in Akka, the system
    /// ends with it.
    GuardianStopped,
    /// The application gave its own reason to `CoordinatedShutdown::run`.
    User(String),
    /// This node's cluster member was downed (by the split-brain resolver
    /// or by hand): Akka's `ClusterDowningReason`.
    ClusterDowning,
    /// This node left its cluster (`Cluster::leave`): Akka's
    /// `ClusterLeavingReason`.
    ClusterLeaving,
    /// This node did not join its cluster through its seed nodes within
    /// the cluster's `shutdown_after_unsuccessful_join_seed_nodes`:
    /// Akka's `ClusterJoinUnsuccessfulReason`.
    ClusterJoinUnsuccessful,
}

/// Published on the event stream when coordinated shutdown begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownStarted {
    /// The reason of the first `run`; later runs do not change it.
    pub reason: ShutdownReason,
}

/// Published on the event stream after each phase before the actors stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseFinished {
    /// The phase's name.
    pub phase: &'static str,
    /// How long the phase took.
    pub elapsed: Duration,
    /// Tasks that failed (panicked) or were abandoned at the phase timeout.
    pub failed_tasks: Vec<String>,
}

/// Why a task was not added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddTaskError {
    /// The phase is not one of [`PHASES`].
    #[error("unknown coordinated shutdown phase {0:?}")]
    UnknownPhase(String),
    /// The phase has already begun or passed; the task would never run.
    #[error("task {task:?} not added: phase {phase:?} has already run")]
    PhaseStarted {
        /// The phase given.
        phase: String,
        /// The task's name.
        task: String,
    },
}

type TaskFn = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

#[derive(Default)]
struct State {
    tasks: HashMap<&'static str, Vec<(String, TaskFn)>>,
    /// Index into [`PHASES`] of the phase running now; `None` before `run`.
    current: Option<usize>,
    reason: Option<ShutdownReason>,
}

/// The system's coordinated shutdown; `ActorSystem::coordinated_shutdown`.
pub struct CoordinatedShutdown<'a> {
    pub(crate) system: &'a ActorSystem,
}

/// The part the system keeps.
#[derive(Default)]
pub(crate) struct ShutdownState {
    state: Mutex<State>,
    /// 0 (not draining), [`DRAINING`] or [`FORCED`]: read by stopping
    /// cells, which are on no hot path.
    drain: AtomicU8,
}

/// The actors stop top-down, each after the messages queued before it.
const DRAINING: u8 = 1;
/// The drain's deadline has passed: whoever is left stops at once.
const FORCED: u8 = 2;

impl ShutdownState {
    /// Whether a stopping actor lets its children handle what is queued
    /// for them first (a graceful stop) rather than stopping them at once.
    pub(crate) fn drains(&self) -> bool {
        self.drain.load(Ordering::Acquire) == DRAINING
    }

    /// Whether the drain's deadline has passed.
    pub(crate) fn forced(&self) -> bool {
        self.drain.load(Ordering::Acquire) == FORCED
    }
}

impl CoordinatedShutdown<'_> {
    /// Adds a task to `phase`. Tasks of one phase run concurrently, each
    /// as a task on the system's runtime; the phase ends when all are done
    /// or at `Settings::shutdown_phase_timeout`. A task that panics
    /// (even before it returns its future) or is still running then is
    /// reported (a warning and in [`PhaseFinished::failed_tasks`]) and the
    /// next phase runs anyway, as Akka's `recover = true`. Tasks of
    /// [`ACTOR_SYSTEM_TERMINATE`] are shutdown hooks (see
    /// `ActorSystem::add_shutdown_hook`).
    pub fn add_task<F, Fut>(&self, phase: &str, name: &str, task: F) -> Result<(), AddTaskError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let Some(index) = PHASES.iter().position(|p| *p == phase) else {
            return Err(AddTaskError::UnknownPhase(phase.to_string()));
        };
        let started = || AddTaskError::PhaseStarted {
            phase: phase.to_string(),
            task: name.to_string(),
        };
        if PHASES[index] == ACTOR_SYSTEM_TERMINATE {
            return self
                .system
                .push_shutdown_hook(name.to_string().into(), task)
                .map_err(|()| started());
        }
        let mut state = lock(&self.system.shutdown_state().state);
        if state.current.is_some_and(|c| c >= index) {
            return Err(started());
        }
        state
            .tasks
            .entry(PHASES[index])
            .or_default()
            .push((name.to_string(), Box::new(move || Box::pin(task()))));
        Ok(())
    }

    /// Runs the phases, then stops the actors and terminates the system;
    /// resolves once it has terminated. Idempotent: a second call (or
    /// `terminate`) joins the first run and its reason is ignored.
    pub async fn run(&self, reason: ShutdownReason) {
        let first = {
            let mut state = lock(&self.system.shutdown_state().state);
            if state.current.is_none() && !self.system.is_terminated() {
                state.current = Some(0);
                state.reason = Some(reason.clone());
                true
            } else {
                false
            }
        };
        if first {
            let system = self.system.clone();
            self.system.runtime_handle().spawn(async move {
                system.event_stream().publish(ShutdownStarted { reason });
                run_phases(&system).await;
                stop_actors(&system).await;
            });
        }
        self.system.when_terminated().await;
    }

    /// The reason shutdown began with, once it has.
    pub fn reason(&self) -> Option<ShutdownReason> {
        lock(&self.system.shutdown_state().state).reason.clone()
    }
}

async fn run_phases(system: &ActorSystem) {
    let timeout = system.settings().shutdown_phase_timeout;
    for (index, phase) in PHASES.iter().enumerate() {
        if *phase == ACTOR_SYSTEM_TERMINATE {
            break;
        }
        let tasks = {
            let mut state = lock(&system.shutdown_state().state);
            state.current = Some(index);
            state.tasks.remove(phase).unwrap_or_default()
        };
        if tasks.is_empty() {
            continue;
        }
        let began = Instant::now();
        let deadline = tokio::time::Instant::now() + timeout;
        let handles: Vec<_> = tasks
            .into_iter()
            // The closure is called inside the spawned task, so one that
            // panics before making its future fails that task (a JoinError)
            // instead of unwinding through the shutdown and stopping it.
            .map(|(name, task)| {
                (
                    name,
                    system.runtime_handle().spawn(async move { task().await }),
                )
            })
            .collect();
        let mut failed_tasks = Vec::new();
        for (name, mut handle) in handles {
            match tokio::time::timeout_at(deadline, &mut handle).await {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => tracing::warn!(
                    system = system.name(), phase, task = %name, error = %e,
                    "coordinated shutdown task failed; shutdown goes on"
                ),
                Err(_) => {
                    handle.abort();
                    tracing::warn!(
                        system = system.name(), phase, task = %name,
                        timeout_ms = timeout.as_millis() as u64,
                        "coordinated shutdown task abandoned at the phase timeout"
                    );
                }
            }
            failed_tasks.push(name);
        }
        system.event_stream().publish(PhaseFinished {
            phase,
            elapsed: began.elapsed(),
            failed_tasks,
        });
    }
    lock(&system.shutdown_state().state).current = Some(PHASES.len() - 1);
}

/// The `actor-system-terminate` phase's first part: stops the actor tree.
/// Draining, the root is stopped gracefully and every stopping actor stops
/// its children the same way, so each handles what was queued before its
/// stop, parents first; at the phase timeout whoever is left is stopped
/// at once, and what they had queued becomes dead letters.
async fn stop_actors(system: &ActorSystem) {
    if !system.settings().drain_on_shutdown {
        system.stop_all(false);
        return;
    }
    let state = system.shutdown_state();
    state.drain.store(DRAINING, Ordering::Release);
    system.stop_all(true);
    let timeout = system.settings().shutdown_phase_timeout;
    tokio::select! {
        () = system.when_terminated() => {}
        () = tokio::time::sleep(timeout) => {
            // Set before the stop goes out, so every cell that hears it
            // stops its children at once too.
            state.drain.store(FORCED, Ordering::Release);
            if system.force_stop() {
                tracing::warn!(
                    system = system.name(),
                    timeout_ms = timeout.as_millis() as u64,
                    "actors still draining at the shutdown phase timeout are stopped; \
                     their queued messages become dead letters"
                );
            }
        }
    }
}

/// Runs coordinated shutdown when the process gets SIGTERM, until the
/// system terminates. Holds the system only weakly so it can be dropped.
/// (Not in loom's model-checking build, where tokio has no signals.)
#[cfg(all(unix, not(loom)))]
pub(crate) fn watch_sigterm(system: &ActorSystem) {
    use tokio::signal::unix::{signal, SignalKind};
    let _enter = system.runtime_handle().enter();
    let mut sigterm = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(system = system.name(), error = %e, "cannot watch SIGTERM");
            return;
        }
    };
    let weak = system.downgrade();
    let mut terminated = system.terminated_receiver();
    system.runtime_handle().spawn(async move {
        tokio::select! {
            Some(()) = sigterm.recv() => {
                if let Some(system) = weak.upgrade() {
                    system.coordinated_shutdown().run(ShutdownReason::Sigterm).await;
                }
            }
            () = async { let _ = terminated.wait_for(|d| *d).await; } => {}
        }
    });
}

#[cfg(any(not(unix), loom))]
pub(crate) fn watch_sigterm(system: &ActorSystem) {
    tracing::warn!(
        system = system.name(),
        "shutdown_on_sigterm has no effect on this platform"
    );
}
