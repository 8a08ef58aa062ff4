//! `ask-local`: in-process ask round trips, one in flight; p50/p99.

use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo};

use super::{ready, Ctx, Scenario};
use crate::measure::Workload;
use crate::progress::Progress;
use crate::report::rows::AskLocalRow;
use crate::report::{Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "ask-local",
    about: "in-process ask round-trip latency, p50 and p99",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

fn run(ctx: &Ctx) -> crate::Result<Report<AskLocalRow>> {
    let n = ctx
        .cli
        .requests
        .unwrap_or(if ctx.cli.quick { 20_000 } else { 100_000 })
        .max(10);
    let runs = ctx.cli.runs();
    let progress = Progress::new(2);
    let peers = ctx.peers(&progress);
    progress.add_steps((ready(&peers) * runs) as u64);
    let mut report = Report::new(SCENARIO.name, crate::chart::ask_local);
    // A runtime like the peers' (two workers), on which the asking task
    // runs: the application's runtime.
    let app = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    for mode in [Mode::AskAppRuntime, Mode::AskDefault, Mode::ActorReply] {
        progress.start(&format!(
            "volley: {n} {} × {runs}",
            match mode {
                Mode::AskAppRuntime => "asks (app-runtime dispatcher)",
                Mode::AskDefault => "asks (default dispatcher)",
                Mode::ActorReply => "actor-to-actor requests",
            }
        ));
        let system = match mode {
            Mode::AskAppRuntime => {
                ActorSystem::with_runtime("ask", app_runtime_settings(), app.handle().clone())?
            }
            Mode::AskDefault | Mode::ActorReply => ActorSystem::new("ask")?,
        };
        let mut requests = Requests {
            app: &app,
            system,
            mode,
        };
        let row = requests.measure(n, runs);
        ctx.rt.block_on(requests.system.terminate());
        report.rows.push(Row::measured("volley", row?));
        progress.done();
    }
    let args = vec!["--requests".to_string(), n.to_string()];
    report.rows.extend(
        ctx.run_peers(&progress, peers, SCENARIO.name, &args, |r: &AskLocalRow| {
            r.p50_ns as f64
        }),
    );
    progress.finish();
    Ok(report)
}

/// Settings whose default dispatcher runs actors as tasks on the
/// system's runtime.
pub fn app_runtime_settings() -> volley::Settings {
    let mut settings = volley::Settings::default();
    settings.default_dispatcher.kind = volley::DispatcherKind::AppRuntime;
    settings
}

/// How volley's requests are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `ask` from a task on the application's runtime, to an actor on the
    /// application-runtime dispatcher of a system started on that runtime.
    AskAppRuntime,
    /// `ask` from a task on the application's runtime, to an actor on the
    /// default (work-stealing) dispatcher.
    AskDefault,
    /// A requester actor on the same dispatcher (see [`measure_actor_reply`]).
    ActorReply,
}

/// Request/response runs of one [`Mode`] on one actor system.
struct Requests<'a> {
    app: &'a tokio::runtime::Runtime,
    system: ActorSystem,
    mode: Mode,
}

impl Workload for Requests<'_> {
    type Run = Histogram<u64>;
    type Row = AskLocalRow;

    fn run(&mut self, requests: u64) -> crate::Result<Histogram<u64>> {
        match self.mode {
            Mode::AskAppRuntime | Mode::AskDefault => measure(self.app, &self.system, requests),
            Mode::ActorReply => measure_actor_reply(&self.system, requests),
        }
    }

    fn row(&self, requests: u64, hist: Histogram<u64>) -> AskLocalRow {
        AskLocalRow {
            mode: Some(
                match self.mode {
                    Mode::AskAppRuntime => "ask app-runtime",
                    Mode::AskDefault => "ask default",
                    Mode::ActorReply => "actor-reply",
                }
                .to_string(),
            ),
            requests,
            p50_ns: hist.value_at_quantile(0.50),
            p99_ns: hist.value_at_quantile(0.99),
            mean_ns: hist.mean(),
        }
    }

    fn figure(row: &AskLocalRow) -> f64 {
        row.p50_ns as f64
    }
}

struct Responder;

impl Actor for Responder {
    type Msg = (u64, ReplyTo<u64>);
    fn handle(&mut self, _ctx: &mut Context<Self>, (n, reply): Self::Msg) -> HandleResult {
        reply.tell(n + 1);
        Ok(())
    }
}

/// The other side of the actor-to-actor round trip: asks the responder with
/// its own ref as the reply handle and sends the next request on each reply.
struct Requester {
    responder: ActorRef<(u64, ReplyTo<u64>)>,
    n: u64,
    warmup: u64,
    i: u64,
    sent_at: Instant,
    hist: Option<Histogram<u64>>,
    error: Option<String>,
    done: Sender<(Histogram<u64>, Option<String>)>,
}

impl Actor for Requester {
    type Msg = u64;
    fn handle(&mut self, ctx: &mut Context<Self>, answer: u64) -> HandleResult {
        let ns = self.sent_at.elapsed().as_nanos() as u64;
        if answer == u64::MAX {
            // Start.
        } else {
            if answer != self.i + 1 && self.error.is_none() {
                self.error = Some(format!("request {} answered {answer}", self.i));
            }
            if self.i >= self.warmup {
                if let Some(h) = self.hist.as_mut() {
                    h.saturating_record(ns.max(1));
                }
            }
            self.i += 1;
        }
        if self.i == self.warmup + self.n {
            if let Some(h) = self.hist.take() {
                let _ = self.done.send((h, self.error.take()));
            }
            return Ok(());
        }
        self.sent_at = Instant::now();
        self.responder.tell((self.i, ctx.myself()));
        Ok(())
    }
}

/// Actor-to-actor request and reply: a requester actor on the same
/// dispatcher tells the responder with its own ref as the `ReplyTo`; the
/// round trips in ns.
pub fn measure_actor_reply(system: &ActorSystem, n: u64) -> crate::Result<Histogram<u64>> {
    let responder = system.spawn_anonymous(Props::new(|| Responder))?;
    let hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let (tx, rx) = channel();
    let requester = {
        let responder = responder.clone();
        let hist = std::sync::Mutex::new(Some(hist));
        system.spawn_anonymous(Props::new(move || Requester {
            responder: responder.clone(),
            n,
            warmup: n / 10,
            i: 0,
            sent_at: Instant::now(),
            hist: hist.lock().expect("not poisoned").take(),
            error: None,
            done: tx.clone(),
        }))?
    };
    requester.tell(u64::MAX);
    let (hist, error) = rx
        .recv_timeout(Duration::from_secs(300))
        .map_err(|_| "timed out waiting for the requester actor")?;
    if let Some(e) = error {
        return Err(e.into());
    }
    system.stop(&requester);
    system.stop(&responder);
    Ok(hist)
}

/// `n` measured asks after `n/10` unrecorded ones, each answer checked,
/// from a task on `app`; the round trips in ns.
pub fn measure(
    app: &tokio::runtime::Runtime,
    system: &ActorSystem,
    n: u64,
) -> crate::Result<Histogram<u64>> {
    let responder = system.spawn_anonymous(Props::new(|| Responder))?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let timeout = Duration::from_secs(10);
    let asker = responder.clone();
    let driver = app.spawn(async move {
        for i in 0..n / 10 + n {
            let t0 = Instant::now();
            let answer = asker
                .ask(|r| (i, r), timeout)
                .await
                .map_err(|e| e.to_string())?;
            let ns = t0.elapsed().as_nanos() as u64;
            if answer != i + 1 {
                return Err(format!("ask {i} answered {answer}, expected {}", i + 1));
            }
            if i >= n / 10 {
                hist.saturating_record(ns.max(1));
            }
        }
        Ok::<_, String>(hist)
    });
    let hist = app
        .block_on(driver)
        .map_err(|e| format!("the asking task failed: {e}"))??;
    system.stop(&responder);
    Ok(hist)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn asks_are_answered_and_measured() {
        let app = app();
        let system = ActorSystem::new("ask-test").unwrap();
        let h = measure(&app, &system, 200).unwrap();
        assert_eq!(h.len(), 200);
        assert!(h.value_at_quantile(0.5) > 0);
        let h = measure_actor_reply(&system, 200).unwrap();
        assert_eq!(h.len(), 200);
        let mut requests = Requests {
            app: &app,
            system,
            mode: Mode::ActorReply,
        };
        let row = requests.measure(100, 3).unwrap();
        assert_eq!(
            (row.mode.as_deref(), row.requests),
            (Some("actor-reply"), 100)
        );
        assert!(row.p99_ns >= row.p50_ns && row.p50_ns > 0);
        app.block_on(requests.system.terminate());
    }

    #[test]
    fn asks_to_actors_on_the_app_runtime_are_answered() {
        let app = app();
        let system =
            ActorSystem::with_runtime("ask-app", app_runtime_settings(), app.handle().clone())
                .unwrap();
        let mut requests = Requests {
            app: &app,
            system,
            mode: Mode::AskAppRuntime,
        };
        let row = requests.measure(200, 1).unwrap();
        assert_eq!(row.mode.as_deref(), Some("ask app-runtime"));
        assert!(row.p50_ns > 0);
        app.block_on(requests.system.terminate());
    }
}
