//! "Watch the routees" across a cluster: workers on other nodes register
//! under [`workers_key`]; a master finds them through the cluster
//! receptionist, watches them, splits a job over them, and aborts the job
//! cleanly (one answer naming the lost worker, no task left waiting) when
//! a worker stops or its node leaves the cluster.
//!
//! The binary (`cluster_workers.rs`) runs it over three processes; the
//! tests (`tests/it/cluster_workers.rs`) over three in-process nodes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use volley::{
    Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ServiceKey, SpawnError, Terminated,
};
use volley_remote::transport::RegistryError;
use volley_remote::Registry;

/// A task for a worker: square `input`, answer `reply_to`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Square {
    /// The task's id within its job.
    pub task: u32,
    /// The number to square.
    pub input: u64,
    /// The master.
    pub reply_to: ActorRef<TaskDone>,
}

/// A worker's answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct TaskDone {
    /// The task.
    pub task: u32,
    /// Its result.
    pub result: u64,
}

/// The key the workers register under, on every node.
pub fn workers_key() -> ServiceKey<Square> {
    ServiceKey::new("cluster-workers")
}

/// The wire ids of the example's protocols; every node registers them.
pub fn registry() -> Result<Registry, RegistryError> {
    let mut registry = Registry::default();
    registry.register::<Square>(101)?;
    registry.register::<TaskDone>(102)?;
    Ok(registry)
}

/// Squares its tasks, each after `delay` (so that a job is still running
/// when a worker node is killed).
pub struct Worker {
    delay: Duration,
}

impl Worker {
    /// A worker that answers each task after `delay`.
    pub fn props(delay: Duration) -> Props<Worker> {
        Props::new(move || Worker { delay })
    }
}

impl Actor for Worker {
    type Msg = Square;

    fn handle(&mut self, ctx: &mut Context<Self>, task: Square) -> HandleResult {
        let done = TaskDone {
            task: task.task,
            result: task.input * task.input,
        };
        // A scheduler refusal (the system terminating) loses the answer,
        // and the master's watch then ends the job.
        let _ = ctx
            .system()
            .scheduler()
            .schedule_once(self.delay, &task.reply_to, done);
        Ok(())
    }
}

/// Spawns a worker as `name` and registers it under [`workers_key`].
pub fn start_worker(
    system: &ActorSystem,
    name: &str,
    delay: Duration,
) -> Result<ActorRef<Square>, SpawnError> {
    let worker = system.spawn(name, Worker::props(delay))?;
    system.receptionist()?.register(&workers_key(), &worker);
    Ok(worker)
}

/// Why a job gave no total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// No worker was listed.
    NoWorkers,
    /// A worker with tasks of the job terminated (stopped, or its node
    /// was removed from the cluster), so the job was aborted.
    Aborted {
        /// The lost worker's path.
        worker: String,
        /// Tasks of the job without an answer when it was aborted.
        unanswered: usize,
    },
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::NoWorkers => f.write_str("no worker is listed"),
            JobError::Aborted { worker, unanswered } => write!(
                f,
                "job aborted: worker {worker} terminated with {unanswered} tasks unanswered"
            ),
        }
    }
}

impl std::error::Error for JobError {}

/// The sum of the squares, or why there is none.
pub type JobOutcome = Result<u64, JobError>;

/// Runs one job over its workers, answers once, then stops.
struct Master {
    workers: Vec<ActorRef<Square>>,
    inputs: Vec<u64>,
    /// Unanswered tasks and the worker each went to.
    pending: BTreeMap<u32, ActorRef<Square>>,
    total: u64,
    answer: Arc<Mutex<Option<oneshot::Sender<JobOutcome>>>>,
}

impl Master {
    fn finish(&mut self, ctx: &mut Context<Self>, outcome: JobOutcome) {
        let sender = self.answer.lock().ok().and_then(|mut slot| slot.take());
        if let Some(sender) = sender {
            let _ = sender.send(outcome);
        }
        ctx.stop_self();
    }
}

impl Actor for Master {
    type Msg = TaskDone;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if self.workers.is_empty() {
            self.finish(ctx, Err(JobError::NoWorkers));
            return Ok(());
        }
        for worker in &self.workers {
            ctx.watch(worker);
        }
        let me = ctx.myself();
        for (task, input) in self.inputs.iter().enumerate() {
            let task = task as u32;
            let worker = self.workers[task as usize % self.workers.len()].clone();
            worker.tell(Square {
                task,
                input: *input,
                reply_to: me.clone(),
            });
            self.pending.insert(task, worker);
        }
        if self.pending.is_empty() {
            self.finish(ctx, Ok(0));
        }
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, done: TaskDone) -> HandleResult {
        if self.pending.remove(&done.task).is_some() {
            self.total += done.result;
            if self.pending.is_empty() {
                let total = self.total;
                self.finish(ctx, Ok(total));
            }
        }
        Ok(())
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, gone: Terminated) -> HandleResult {
        let lost = self.pending.values().any(|worker| *worker == gone.actor);
        if lost {
            let unanswered = self.pending.len();
            let worker = gone.actor.path().to_string();
            self.finish(ctx, Err(JobError::Aborted { worker, unanswered }));
        }
        Ok(())
    }
}

/// The workers the receptionist lists now (every member's, with a
/// cluster running).
pub async fn listed_workers(
    system: &ActorSystem,
    timeout: Duration,
) -> Result<Vec<ActorRef<Square>>, Box<dyn std::error::Error>> {
    let listing = system
        .receptionist()?
        .lookup(&workers_key(), timeout)
        .await?;
    let mut workers: Vec<_> = listing.services.into_iter().collect();
    workers.sort_by_key(|worker| worker.path().to_string());
    Ok(workers)
}

/// Runs a job squaring `inputs` over `workers` (round robin) and sums the
/// squares; the master, named `name`, watches every worker.
pub async fn run_job(
    system: &ActorSystem,
    name: &str,
    workers: Vec<ActorRef<Square>>,
    inputs: Vec<u64>,
) -> Result<JobOutcome, Box<dyn std::error::Error>> {
    let (sender, answer) = oneshot::channel();
    let answer_slot = Arc::new(Mutex::new(Some(sender)));
    system.spawn(
        name,
        Props::new(move || Master {
            workers: workers.clone(),
            inputs: inputs.clone(),
            pending: BTreeMap::new(),
            total: 0,
            answer: answer_slot.clone(),
        }),
    )?;
    Ok(answer.await?)
}
