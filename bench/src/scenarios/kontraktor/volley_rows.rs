//! volley's rows: the seed's two tests in two processes (node B, with the
//! adder, is a child `volley-bench remote-server`), sent the ways
//! remote-tell and remote-ask send, reusing their code.
//!
//! Tell: `remote_tell` checks the receiver's count and sum against what the
//! sender sent, and that no send failed. Ask: `remote_ask` checks every
//! answer at the sender (a stronger check than a sum); the receiver's count
//! and sum of the requests it answered are then checked here.

use super::row::{KontraktorRow, Test};
use super::verify::{SumCheck, Tally};
use crate::measure::{median_by, Throughput};
use crate::scenarios::remote_ask::{actors_once, ask_once};
use crate::scenarios::remote_common::{ask_report, AdderOnB};
use crate::scenarios::remote_tell::{tell_from_actor, tell_once};

/// The `b` remote-ask's senders add to each `a`.
const ASK_B: i64 = 7;

/// How volley sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// Tell from one actor on node A's dispatcher.
    TellActor,
    /// Tell with `send().await` from one tokio task.
    TellTask,
    /// Requests from `clients` client actors, `window` in flight each.
    AskActors { clients: u64, window: u64 },
    /// `ActorRef::ask` from `tasks` tokio tasks on node A's runtime.
    AskTasks { tasks: usize },
    /// `ActorRef::ask` from `tasks` tokio tasks on an application's own
    /// runtime of `workers` workers, node A's system keeping its runtime
    /// (what `#[tokio::main]` and `ActorSystem::new` give).
    AskTasksApp { tasks: usize, workers: usize },
    /// `ActorRef::ask` from `tasks` tokio tasks on node A's runtime, each
    /// keeping `window` asks in flight (`super::ask_many`).
    AskTasksMany { tasks: usize, window: usize },
}

impl Sender {
    pub fn test(self) -> Test {
        match self {
            Sender::TellActor | Sender::TellTask => Test::Tell,
            _ => Test::Ask,
        }
    }

    pub fn name(self) -> String {
        match self {
            Sender::TellActor => "1 actor".into(),
            Sender::TellTask => "1 task".into(),
            Sender::AskActors { clients, .. } => format!("{clients} client actors"),
            Sender::AskTasks { tasks } => format!("ask from {tasks} tasks"),
            Sender::AskTasksApp { tasks, workers } => {
                format!("ask from {tasks} tasks, app runtime ({workers} workers)")
            }
            Sender::AskTasksMany { tasks, window } => {
                format!("ask from {tasks} tasks × {window} in flight")
            }
        }
    }

    /// The name `--cases` picks this sender by.
    pub fn case(self) -> &'static str {
        match self {
            Sender::TellActor => "tell-actor",
            Sender::TellTask => "tell-task",
            Sender::AskActors { .. } => "ask-actors",
            Sender::AskTasks { .. } => "ask-tasks",
            Sender::AskTasksApp { .. } => "ask-tasks-app",
            Sender::AskTasksMany { .. } => "ask-tasks-many",
        }
    }

    /// `--inflight K`: `K` one-ask tasks instead of 10,000 (to see what
    /// the number of tasks, and so their memory, does to the rate); the
    /// other senders as they are.
    pub fn with_tasks(self, inflight: Option<usize>) -> Sender {
        match (self, inflight) {
            (Sender::AskTasks { .. }, Some(k)) => Sender::AskTasks { tasks: k.max(1) },
            (Sender::AskTasksApp { workers, .. }, Some(k)) => Sender::AskTasksApp {
                tasks: k.max(1),
                workers,
            },
            (s, _) => s,
        }
    }

    pub fn in_flight(self) -> Option<u64> {
        match self {
            Sender::TellActor | Sender::TellTask => None,
            Sender::AskActors { clients, window } => Some(clients * window),
            Sender::AskTasks { tasks } | Sender::AskTasksApp { tasks, .. } => Some(tasks as u64),
            Sender::AskTasksMany { tasks, window } => Some((tasks * window) as u64),
        }
    }

    /// The asks this sender makes of `n` requested, and what they add up
    /// to (the pairs `remote_ask` sends: `a` counting up per task or
    /// client, `b` = 7).
    pub fn ask_tally(self, n: u64) -> Tally {
        match self {
            Sender::AskActors { clients, .. } => {
                let one = Tally::range_plus(0, n / clients, ASK_B);
                (1..clients).fold(one, |t, _| t.plus(one))
            }
            Sender::AskTasks { tasks }
            | Sender::AskTasksApp { tasks, .. }
            | Sender::AskTasksMany { tasks, .. } => {
                let tasks = (tasks as u64).clamp(1, n.max(1));
                Tally::range_plus(0, n / tasks * tasks, ASK_B)
            }
            Sender::TellActor | Sender::TellTask => Tally::new(0, 0),
        }
    }

    /// One checked run of `n` messages.
    fn run_once(self, to: &AdderOnB, n: u64) -> crate::Result<Throughput> {
        let (ctx, nodes, adder) = (to.ctx, to.nodes, &to.adder);
        let run = match self {
            Sender::TellActor => return tell_from_actor(ctx, nodes, adder, n),
            Sender::TellTask => return tell_once(ctx, nodes, adder, n, 1),
            Sender::AskActors { clients, window } => actors_once(nodes, adder, n, clients, window)?,
            Sender::AskTasks { tasks } => {
                let on = nodes.a.system.runtime_handle();
                ask_once(ctx, nodes, adder, n, tasks, &on)?
            }
            Sender::AskTasksApp { tasks, workers } => {
                let on = app_runtime(workers)?.handle().clone();
                ask_once(ctx, nodes, adder, n, tasks, &on)?
            }
            Sender::AskTasksMany { tasks, window } => {
                let on = nodes.a.system.runtime_handle();
                super::ask_many::ask_many_once(ctx, nodes, adder, n, (tasks, window), &on)?
            }
        };
        let expected = self.ask_tally(n);
        let (count, sum) = ask_report(&ctx.rt, adder)?;
        SumCheck {
            expected,
            // `remote_ask` failed the run unless every answer was right.
            sender: expected,
            wrong: 0,
            receiver: Tally::new(count, sum),
        }
        .verify()?;
        Ok(run)
    }

    /// A warm-up of `n / 2`, then `runs` runs of `n`: the median run.
    pub fn measure(self, to: &AdderOnB, n: u64, runs: usize) -> crate::Result<KontraktorRow> {
        self.run_once(to, (n / 2).max(1))?;
        let mut done = Vec::new();
        for _ in 0..runs {
            done.push(self.run_once(to, n)?);
        }
        let median = median_by(done, Throughput::per_sec).ok_or("no run")?;
        Ok(KontraktorRow {
            test: self.test(),
            sender: self.name(),
            msgs_per_s: median.per_sec(),
            in_flight: self.in_flight(),
            verified: true,
        })
    }
}

/// The application's runtime of [`Sender::AskTasksApp`]: built once, for
/// the process (its warm-up and runs share it, as an application's tasks
/// would).
fn app_runtime(workers: usize) -> crate::Result<&'static tokio::runtime::Runtime> {
    static APP: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(rt) = APP.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("app")
        .enable_all()
        .build()?;
    Ok(APP.get_or_init(|| rt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_say_what_they_are() {
        let actors = Sender::AskActors {
            clients: 10,
            window: 1000,
        };
        let tasks = Sender::AskTasks { tasks: 10_000 };
        let app = Sender::AskTasksApp {
            tasks: 10_000,
            workers: 2,
        };
        assert_eq!(
            [Sender::TellActor, Sender::TellTask, actors, tasks, app].map(|s| (
                s.test(),
                s.name(),
                s.in_flight()
            )),
            [
                (Test::Tell, "1 actor".to_string(), None),
                (Test::Tell, "1 task".to_string(), None),
                (Test::Ask, "10 client actors".to_string(), Some(10_000)),
                (Test::Ask, "ask from 10000 tasks".to_string(), Some(10_000)),
                (
                    Test::Ask,
                    "ask from 10000 tasks, app runtime (2 workers)".to_string(),
                    Some(10_000)
                ),
            ]
        );
        assert_eq!(
            [Sender::TellActor, Sender::TellTask, actors, tasks, app].map(Sender::case),
            [
                "tell-actor",
                "tell-task",
                "ask-actors",
                "ask-tasks",
                "ask-tasks-app"
            ]
        );
    }

    #[test]
    fn many_in_flight_per_task_and_the_number_of_tasks() {
        let many = Sender::AskTasksMany {
            tasks: 10,
            window: 1000,
        };
        assert_eq!(
            (many.name(), many.case(), many.in_flight()),
            (
                "ask from 10 tasks × 1000 in flight".to_string(),
                "ask-tasks-many",
                Some(10_000)
            )
        );
        // The same pairs as 10 one-ask tasks: a = 0..n, b = 7.
        assert_eq!(
            many.ask_tally(25),
            Sender::AskTasks { tasks: 10 }.ask_tally(25)
        );
        // `--inflight` sets the one-ask tasks' number only.
        let tasks = Sender::AskTasks { tasks: 10_000 };
        assert_eq!(
            tasks.with_tasks(Some(1000)),
            Sender::AskTasks { tasks: 1000 }
        );
        assert_eq!(
            Sender::AskTasksApp {
                tasks: 10_000,
                workers: 2
            }
            .with_tasks(Some(0)),
            Sender::AskTasksApp {
                tasks: 1,
                workers: 2
            }
        );
        assert_eq!(many.with_tasks(Some(5)), many);
        assert_eq!(tasks.with_tasks(None), tasks);
    }

    #[test]
    fn the_expected_ask_tally_follows_remote_asks_pairs() {
        // 2 clients × 3 requests: a = 0, 1, 2 each, b = 7.
        let actors = Sender::AskActors {
            clients: 2,
            window: 1,
        };
        assert_eq!(actors.ask_tally(6), Tally::new(6, 2 * (7 + 8 + 9)));
        // 4 tasks × 2 asks: a = 0..8, b = 7; a remainder is not asked.
        let tasks = Sender::AskTasks { tasks: 4 };
        assert_eq!(tasks.ask_tally(9), Tally::new(8, 28 + 56));
        let app = Sender::AskTasksApp {
            tasks: 4,
            workers: 2,
        };
        assert_eq!(app.ask_tally(9), tasks.ask_tally(9));
    }
}
