//! `remote-ask`: kontraktor's remote ask test. W tasks each ask a remote
//! adder `Sum { a, b }` in a loop, so W requests are in flight; every
//! answer is checked (= a + b) and counted. The tasks run on the runtime
//! node A's system runs on (`ask app-runtime`) or on a runtime of their
//! own (`ask default`); a last row has client actors instead of tasks.
//! Each runtime also gets a `tokio` row, the floor under any ask from its
//! tasks (`super::ask_floor`): the same round trips with no actor and no
//! network.

use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, Context, HandleResult, Props};

use super::remote_common::{best_rate_note, load, AdderOnB, Calc, Layout, Nodes};
use super::{Ctx, Scenario};
use crate::measure::{Calibration, Throughput, Workload};
use crate::progress::Progress;
use crate::report::remote_rows::RemoteAskRow;
use crate::report::{measured, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "remote-ask",
    about: "asks to a remote adder with thousands in flight, msgs/s",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

const DEFAULT_WINDOW: usize = 10_000;

/// `n` asks from `window` concurrent tasks; returns the answers and the
/// time they took.
pub fn ask_once(
    ctx: &Ctx,
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    n: u64,
    window: usize,
    on: &tokio::runtime::Handle,
) -> crate::Result<Throughput> {
    let window = (window as u64).min(n).max(1);
    let per = n / window;
    let dead_before = nodes.dead_letters();
    let start = Instant::now();
    let handle = on.clone();
    let (ok, wrong) = ctx.rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for w in 0..window {
            let adder = adder.clone();
            set.spawn_on(
                async move {
                    let (mut ok, mut wrong) = (0u64, 0u64);
                    for i in 0..per {
                        let a = (w * per + i) as i64;
                        let b = 7;
                        match adder
                            .ask(
                                |reply_to| Calc::Sum { a, b, reply_to },
                                Duration::from_secs(60),
                            )
                            .await
                        {
                            Ok(s) if s == a + b => ok += 1,
                            _ => wrong += 1,
                        }
                    }
                    (ok, wrong)
                },
                &handle,
            );
        }
        super::ask_floor::right_and_wrong(set, per).await
    });
    let elapsed = start.elapsed();
    let dead = nodes.dead_letters() - dead_before;
    if ok != per * window || wrong != 0 || dead != 0 {
        return Err(format!(
            "remote-ask mismatch: {} asks, {ok} right answers, {wrong} wrong or failed, \
             {dead} dead letters",
            per * window
        )
        .into());
    }
    Ok(Throughput::new(ok, elapsed))
}

/// Requests from client actors instead of `ask`: each keeps `window`
/// `Sum` requests in flight with its own ref as `reply_to` (no temporary
/// reply handle per request) and checks every answer (answers come back in
/// order on the lane).
struct SumClient {
    adder: ActorRef<Calc>,
    me: Option<ActorRef<i64>>,
    total: u64,
    window: u64,
    sent: u64,
    received: u64,
    wrong: u64,
    done: Sender<(u64, u64)>,
}

const B: i64 = 7;
const GO: i64 = i64::MIN;

impl SumClient {
    fn request(&mut self) {
        let a = self.sent as i64;
        let reply_to = self.me.clone().expect("set in pre_start");
        self.adder.tell(Calc::Sum { a, b: B, reply_to });
        self.sent += 1;
    }
}

impl Actor for SumClient {
    type Msg = i64;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.me = Some(ctx.myself());
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, sum: i64) -> HandleResult {
        if sum == GO {
            while self.sent < self.window.min(self.total) {
                self.request();
            }
            return Ok(());
        }
        if sum != self.received as i64 + B {
            self.wrong += 1;
        }
        self.received += 1;
        if self.sent < self.total {
            self.request();
        }
        if self.received == self.total {
            let _ = self.done.send((self.received, self.wrong));
        }
        Ok(())
    }
}

/// `n` requests from `clients` client actors with `window` each in flight.
pub fn actors_once(
    nodes: &Nodes,
    adder: &ActorRef<Calc>,
    n: u64,
    clients: u64,
    window: u64,
) -> crate::Result<Throughput> {
    let per = n / clients;
    let (tx, rx) = channel();
    let mut refs = Vec::new();
    for _ in 0..clients {
        let (adder, done) = (adder.clone(), tx.clone());
        refs.push(
            nodes
                .a
                .system
                .spawn_anonymous(Props::new(move || SumClient {
                    adder: adder.clone(),
                    me: None,
                    total: per,
                    window,
                    sent: 0,
                    received: 0,
                    wrong: 0,
                    done: done.clone(),
                }))?,
        );
    }
    drop(tx);
    let dead_before = nodes.dead_letters();
    let start = Instant::now();
    for r in &refs {
        r.tell(GO);
    }
    let (mut ok, mut wrong) = (0, 0);
    for _ in 0..clients {
        let (o, w) = rx
            .recv_timeout(Duration::from_secs(120))
            .map_err(|_| "remote-ask: the client actors did not finish")?;
        ok += o;
        wrong += w;
    }
    let elapsed = start.elapsed();
    for r in &refs {
        nodes.a.system.stop(r);
    }
    let dead = nodes.dead_letters() - dead_before;
    if ok != per * clients || wrong != 0 || dead != 0 {
        return Err(format!(
            "remote-ask (actors): {} requests, {ok} answered, {wrong} wrong, {dead} dead letters",
            per * clients
        )
        .into());
    }
    Ok(Throughput::new(ok, elapsed))
}

/// Who asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asker {
    /// `ask()` from `window` tasks.
    Tasks { window: usize, on: TaskRuntime },
    /// `clients` client actors with `window` requests in flight each.
    Actors { clients: u64, window: u64 },
    /// No ask: `window` tasks round-tripping to a thread through tokio's
    /// oneshot, the floor under `Tasks` on the same runtime
    /// (`super::ask_floor`).
    Floor { window: usize, on: TaskRuntime },
}

impl Asker {
    /// The system a row of this asker is reported under.
    fn system(self) -> &'static str {
        match self {
            Asker::Floor { .. } => "tokio",
            _ => "volley",
        }
    }
}

/// Where the asking tasks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskRuntime {
    /// On the runtime node A's system runs on, which reads the replies
    /// (`ask app-runtime`: what an application gets by starting its system
    /// on its own runtime with `ActorSystem::with_runtime`).
    System,
    /// On another runtime, two workers, as an application whose system
    /// keeps a runtime of its own (`ask default`): each reply crosses to it.
    Separate,
}

/// Requests from one [`Asker`] to the adder on node B.
struct Asks<'a> {
    to: &'a AdderOnB<'a>,
    asker: Asker,
    /// The runtime of [`TaskRuntime::Separate`].
    app: &'a tokio::runtime::Runtime,
}

impl Workload for Asks<'_> {
    type Run = Throughput;
    type Row = RemoteAskRow;

    fn run(&mut self, requests: u64) -> crate::Result<Throughput> {
        let to = self.to;
        let handle = |on| match on {
            TaskRuntime::System => to.nodes.a.system.runtime_handle(),
            TaskRuntime::Separate => self.app.handle().clone(),
        };
        match self.asker {
            Asker::Tasks { window, on } => {
                ask_once(to.ctx, to.nodes, &to.adder, requests, window, &handle(on))
            }
            Asker::Floor { window, on } => {
                super::ask_floor::floor_once(&to.ctx.rt, requests, window, &handle(on))
            }
            Asker::Actors { clients, window } => {
                actors_once(to.nodes, &to.adder, requests, clients, window)
            }
        }
    }

    fn row(&self, _requests: u64, run: Throughput) -> RemoteAskRow {
        let (mode, inflight) = match self.asker {
            Asker::Tasks { window, on } => (
                match on {
                    TaskRuntime::System => "ask app-runtime",
                    TaskRuntime::Separate => "ask default",
                }
                .to_string(),
                window as u64,
            ),
            Asker::Floor { window, on } => (
                match on {
                    TaskRuntime::System => "task floor app-runtime",
                    TaskRuntime::Separate => "task floor default",
                }
                .to_string(),
                window as u64,
            ),
            Asker::Actors { clients, window } => {
                (format!("{clients} client actors"), clients * window)
            }
        };
        RemoteAskRow {
            mode,
            inflight,
            requests: run.count,
            elapsed_ns: run.elapsed_ns(),
            msgs_per_sec: run.per_sec(),
            setup: self.to.setup.clone(),
        }
    }

    fn figure(row: &RemoteAskRow) -> f64 {
        row.msgs_per_sec
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<RemoteAskRow>> {
    let layout = Layout::from_cli(&ctx.cli);
    let runs = ctx.cli.runs();
    let quick = ctx.cli.quick;
    let windows: Vec<usize> = match ctx.cli.inflight {
        Some(w) => vec![w.max(1)],
        None => vec![1_000, DEFAULT_WINDOW],
    };
    let progress = Progress::new(4 + 2 * windows.len() as u64);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(SCENARIO.name, crate::chart::throughput_bars);
    progress.start("volley: starting the nodes, warming up");
    let two_processes = ctx.cli.two_processes;
    let app = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let rows = Nodes::run(&ctx.rt, layout, true, two_processes, |nodes| {
        let adder = AdderOnB::spawn(ctx, nodes, layout)?;
        let asks = |asker| Asks {
            to: &adder,
            asker,
            app: &app,
        };
        let warm = if quick { 100_000 } else { 300_000 };
        let calibrated = asks(Asker::Tasks {
            window: DEFAULT_WINDOW,
            on: TaskRuntime::System,
        })
        .calibrate(warm, &Calibration::remote(quick, 50_000.0, 50_000_000.0))?;
        let n = ctx.cli.requests.unwrap_or(calibrated);
        progress.done();
        let mut rows = Vec::new();
        for on in [TaskRuntime::System, TaskRuntime::Separate] {
            for &window in &windows {
                progress.start(&format!("volley: {n} asks, {window} in flight × {runs}"));
                let tasks = Asker::Tasks { window, on };
                rows.push((tasks.system(), asks(tasks).measure(n, runs)?));
                progress.done();
            }
            // The floor under those asks on the same runtime, same count.
            let window = windows[0];
            progress.start(&format!(
                "tokio: {n} task round trips, {window} in flight × {runs}"
            ));
            let floor = Asker::Floor { window, on };
            rows.push((floor.system(), asks(floor).measure(n, runs)?));
            progress.done();
        }
        // Client actors, 10 × (window / 10) in flight, sized on their own
        // (they are much faster than ask()).
        let w = *windows.last().expect("one window");
        let clients = 10u64.min(w as u64);
        let window = (w as u64 / clients).max(1);
        let mut actors = asks(Asker::Actors { clients, window });
        let warm = if quick { 1_000_000 } else { 3_000_000 };
        let calibrated =
            actors.calibrate(warm, &Calibration::remote(quick, 50_000.0, 100_000_000.0))?;
        let n = ctx.cli.requests.unwrap_or(calibrated);
        progress.start(&format!(
            "volley: {n} requests from {clients} client actors × {runs}"
        ));
        rows.push(("volley", actors.measure(n, runs)?));
        progress.done();
        Ok(rows)
    })?;
    report.rows = rows
        .into_iter()
        .map(|(system, r)| Row::measured(system, r))
        .collect();
    progress.finish();
    report.notes.push(best_rate_note(
        measured(&report.rows)
            .filter(|(system, _)| *system == "volley")
            .map(|(_, r)| r.msgs_per_sec),
        "remote request/response",
        5e6,
        "kontraktor seed: 0.86 M asks/s",
    ));
    Ok(report)
}
