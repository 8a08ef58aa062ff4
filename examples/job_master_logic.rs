//! "Watch the routees" (from the Akka 2.0 notes): a master runs a job of N
//! tasks on workers behind a round-robin pool router.
//!
//! - A worker that fails on a task retries it by sending it to itself in
//!   `pre_restart` (it keeps a copy with `keep_for_restart`): the task goes
//!   to the back of the mailbox, and it still carries the master's reply
//!   ref, so the master stays "the sender".
//! - The router supervises the workers: restart on failure, stop after 2
//!   restarts.
//! - The master asks the router for its routees (`GetRoutees`), watches
//!   them, and aborts the whole job when one terminates.
//! - Replies carry the job and task ids; the master aggregates them into one
//!   answer, then stops, and the router and its workers stop with it.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use volley::{
    Actor, ActorError, ActorRef, ActorSystem, AskError, Context, Failure, HandleResult, Props,
    Router, RouterMsg, RouterRef, SupervisorStrategy, Terminated,
};

/// One task of a job. `fail_first` makes it fail on its first attempts
/// (`u32::MAX`: always, a poison task).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec {
    /// Unique within the job; replies are correlated by it.
    pub id: u32,
    /// The worker squares it.
    pub input: u64,
    /// How many attempts fail before one succeeds.
    pub fail_first: u32,
}

impl TaskSpec {
    /// A task that succeeds at once.
    pub fn ok(id: u32, input: u64) -> Self {
        TaskSpec {
            id,
            input,
            fail_first: 0,
        }
    }
}

/// A job: tasks to run, one aggregated answer.
#[derive(Debug, Clone)]
pub struct Job {
    /// Correlates replies with the job.
    pub id: u64,
    /// The tasks.
    pub tasks: Vec<TaskSpec>,
}

/// What the master sends to the workers.
#[derive(Clone)]
pub struct Task {
    job_id: u64,
    spec: TaskSpec,
    /// 0 for the first try; incremented on every retry.
    attempt: u32,
    reply_to: ActorRef<MasterMsg>,
}

/// The aggregated answer of a job that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobReport {
    /// The job.
    pub job_id: u64,
    /// Each task's result, by task id.
    pub results: BTreeMap<u32, u64>,
    /// The sum of all results.
    pub total: u64,
    /// How many failed attempts were retried.
    pub retries: u32,
}

/// Why a job produced no report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// A worker was stopped after failing repeatedly, so the job was aborted.
    Aborted {
        /// The job.
        job_id: u64,
        /// The task that kept failing, if the worker reported one.
        task_id: Option<u32>,
        /// The stopped worker's path.
        worker: String,
        /// How often that task failed.
        failures: u32,
        /// The last failure.
        last_error: String,
    },
    /// The master already runs a job.
    Busy,
    /// The router could not be asked for its workers.
    NoWorkers(String),
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Aborted {
                job_id,
                task_id: Some(task),
                worker,
                failures,
                last_error,
            } => write!(
                f,
                "job {job_id} aborted: task {task} failed {failures} times and its worker \
                 {worker} was stopped (last error: {last_error})"
            ),
            JobError::Aborted { job_id, worker, .. } => {
                write!(f, "job {job_id} aborted: worker {worker} terminated")
            }
            JobError::Busy => f.write_str("the master is already running a job"),
            JobError::NoWorkers(why) => write!(f, "no workers: {why}"),
        }
    }
}

impl std::error::Error for JobError {}

/// A job's single answer.
pub type JobOutcome = Result<JobReport, JobError>;

/// The master's protocol.
pub enum MasterMsg {
    /// Run a job and send the outcome to the given ref.
    Run(Job, ActorRef<JobOutcome>),
    /// The router's answer to `GetRoutees`.
    Routees(Result<Vec<ActorRef<Task>>, AskError>),
    /// A task is done.
    Done {
        /// Correlation: the job.
        job_id: u64,
        /// Correlation: the task.
        task_id: u32,
        /// Its result.
        result: u64,
    },
    /// A task attempt failed (the worker restarts and retries it).
    Failed {
        /// Correlation: the job.
        job_id: u64,
        /// Correlation: the task.
        task_id: u32,
        /// The worker's path.
        worker: String,
        /// What went wrong.
        error: String,
    },
    /// A watched worker terminated (sent by the master to itself).
    WorkerLost(String),
}

/// The error a worker fails with.
#[derive(Debug)]
struct TaskFailed {
    task_id: u32,
    attempt: u32,
    input: u64,
}

impl fmt::Display for TaskFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task {} (input {}) failed on attempt {}",
            self.task_id,
            self.input,
            self.attempt + 1
        )
    }
}

impl std::error::Error for TaskFailed {}

/// Squares the input, unless the task says to fail this attempt.
struct Worker;

impl Actor for Worker {
    type Msg = Task;

    fn handle(&mut self, ctx: &mut Context<Self>, task: Task) -> HandleResult {
        if task.attempt < task.spec.fail_first {
            let error = TaskFailed {
                task_id: task.spec.id,
                attempt: task.attempt,
                input: task.spec.input,
            };
            // Tell the master before failing, so it can name the task if
            // this worker ends up stopped.
            task.reply_to.tell(MasterMsg::Failed {
                job_id: task.job_id,
                task_id: task.spec.id,
                worker: ctx.path().to_string(),
                error: error.to_string(),
            });
            return Err(ActorError::new(error));
        }
        task.reply_to.tell(MasterMsg::Done {
            job_id: task.job_id,
            task_id: task.spec.id,
            result: task.spec.input * task.spec.input,
        });
        Ok(())
    }

    /// The retry: back to the end of this worker's own mailbox.
    fn pre_restart(&mut self, ctx: &mut Context<Self>, _failure: &Failure, task: Option<Task>) {
        if let Some(mut task) = task {
            task.attempt += 1;
            ctx.myself().tell(task);
        }
    }

    fn keep_for_restart(task: &Task) -> Option<Task> {
        Some(task.clone())
    }
}

/// The router's supervision of the workers: restart, at most twice.
pub fn worker_strategy() -> SupervisorStrategy {
    SupervisorStrategy::one_for_one().with_max_restarts_total(2)
}

const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs one job on a pool of workers, then stops (with the pool).
pub struct Master {
    workers: usize,
    router: Option<RouterRef<Task>>,
    job: Option<(Job, ActorRef<JobOutcome>)>,
    pending: HashMap<u32, TaskSpec>,
    results: BTreeMap<u32, u64>,
    retries: u32,
    /// Per worker path: the task that failed last, how often, and why.
    failures: HashMap<String, (u32, u32, String)>,
}

impl Master {
    /// Props for a master with a pool of `workers`.
    pub fn props(workers: usize) -> Props<Master> {
        Props::new(move || Master {
            workers,
            router: None,
            job: None,
            pending: HashMap::new(),
            results: BTreeMap::new(),
            retries: 0,
            failures: HashMap::new(),
        })
    }

    fn finish(&mut self, ctx: &mut Context<Self>, outcome: JobOutcome) {
        if let Some((_, reply_to)) = self.job.take() {
            reply_to.tell(outcome);
        }
        // The router is our child: it and its workers stop with us.
        ctx.stop_self();
    }

    fn dispatch(&mut self, ctx: &mut Context<Self>, routees: Vec<ActorRef<Task>>) {
        let (Some((job, _)), Some(router)) = (&self.job, &self.router) else {
            return;
        };
        if routees.is_empty() {
            self.finish(ctx, Err(JobError::NoWorkers("the pool is empty".into())));
            return;
        }
        for worker in &routees {
            ctx.watch(worker);
        }
        let me = ctx.myself();
        for spec in &job.tasks {
            self.pending.insert(spec.id, spec.clone());
            router.tell(Task {
                job_id: job.id,
                spec: spec.clone(),
                attempt: 0,
                reply_to: me.clone(),
            });
        }
        if self.pending.is_empty() {
            self.complete(ctx);
        }
    }

    fn complete(&mut self, ctx: &mut Context<Self>) {
        let Some((job, _)) = &self.job else { return };
        let report = JobReport {
            job_id: job.id,
            total: self.results.values().sum(),
            results: std::mem::take(&mut self.results),
            retries: self.retries,
        };
        self.finish(ctx, Ok(report));
    }

    fn current_job(&self) -> Option<u64> {
        self.job.as_ref().map(|(job, _)| job.id)
    }
}

impl Actor for Master {
    type Msg = MasterMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let router = Router::pool(self.workers, Props::new(|| Worker))
            .with_supervisor_strategy(worker_strategy())
            .spawn_child(ctx, "workers")?;
        self.router = Some(router);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: MasterMsg) -> HandleResult {
        match msg {
            MasterMsg::Run(_, reply_to) if self.job.is_some() => reply_to.tell(Err(JobError::Busy)),
            MasterMsg::Run(job, reply_to) => {
                self.job = Some((job, reply_to));
                if let Some(router) = &self.router {
                    // Akka's CurrentRoutees -> RouterRoutees.
                    ctx.ask(
                        router.control(),
                        RouterMsg::GetRoutees,
                        ASK_TIMEOUT,
                        MasterMsg::Routees,
                    );
                }
            }
            MasterMsg::Routees(Ok(routees)) => self.dispatch(ctx, routees),
            MasterMsg::Routees(Err(e)) => self.finish(ctx, Err(JobError::NoWorkers(e.to_string()))),
            MasterMsg::Done {
                job_id,
                task_id,
                result,
            } => {
                // Correlation: only this job's tasks, each once.
                if Some(job_id) == self.current_job() && self.pending.remove(&task_id).is_some() {
                    self.results.insert(task_id, result);
                    if self.pending.is_empty() {
                        self.complete(ctx);
                    }
                }
            }
            MasterMsg::Failed {
                job_id,
                task_id,
                worker,
                error,
            } => {
                if Some(job_id) == self.current_job() {
                    self.retries += 1;
                    let entry = self
                        .failures
                        .entry(worker)
                        .or_insert((task_id, 0, String::new()));
                    if entry.0 != task_id {
                        *entry = (task_id, 0, String::new());
                    }
                    entry.1 += 1;
                    entry.2 = error;
                }
            }
            MasterMsg::WorkerLost(worker) => {
                let Some(job_id) = self.current_job() else {
                    return Ok(());
                };
                let (task_id, failures, last_error) = match self.failures.remove(&worker) {
                    Some((task, count, error)) => (Some(task), count, error),
                    None => (None, 0, "terminated".to_string()),
                };
                self.finish(
                    ctx,
                    Err(JobError::Aborted {
                        job_id,
                        task_id,
                        worker,
                        failures,
                        last_error,
                    }),
                );
            }
        }
        Ok(())
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        // The Terminated was queued behind the worker's last `Failed`
        // report, so that report has been handled and the error can name
        // the task. The abort is told to ourselves so that it goes through
        // `handle` with the rest of the job's bookkeeping.
        ctx.myself()
            .tell(MasterMsg::WorkerLost(t.actor.path().to_string()));
        Ok(())
    }
}

/// Spawns a master named `name` with `workers` workers, runs `job` on it and
/// returns its answer. The master stops after answering.
pub async fn run_job(
    system: &ActorSystem,
    name: &str,
    workers: usize,
    job: Job,
) -> Result<JobOutcome, String> {
    let master = system
        .spawn(name, Master::props(workers))
        .map_err(|e| e.to_string())?;
    master
        .ask(|reply| MasterMsg::Run(job, reply), ASK_TIMEOUT)
        .await
        .map_err(|e| e.to_string())
}

/// Eight tasks that all succeed.
pub fn all_succeed_job() -> Job {
    Job {
        id: 1,
        tasks: (1..=8).map(|i| TaskSpec::ok(i, u64::from(i))).collect(),
    }
}

/// Eight tasks, two of which fail once before succeeding.
pub fn transient_failures_job() -> Job {
    let mut job = all_succeed_job();
    job.id = 2;
    job.tasks[2].fail_first = 1;
    job.tasks[5].fail_first = 1;
    job
}

/// Eight tasks; task 6 always fails.
pub fn poison_job() -> Job {
    let mut job = all_succeed_job();
    job.id = 3;
    job.tasks[5].fail_first = u32::MAX;
    job
}
