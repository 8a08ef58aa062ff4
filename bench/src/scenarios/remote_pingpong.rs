//! `remote-pingpong`: Akka.NET's RemotePingPong. Two actor systems on
//! loopback (one process, or two with `--two-processes`); C echo actors are
//! remote-spawned on B, C clients on A each do R round trips with 50 in
//! flight (primed with 50 pings). Total = C × R × 2, Msgs/sec = Total /
//! elapsed; every reply is counted by its client and the sum asserted.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::json;
use volley::{Actor, ActorRef, Context, HandleResult, Props};

use super::remote_common::{load, Layout, Nodes, Ping};
use super::{Ctx, Scenario};
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::{col, num, row, skipped, Fmt, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "remote-pingpong",
    about: "Akka.NET RemotePingPong over loopback: C clients, 50 in flight, msgs/s",
    run,
    chart: crate::chart_remote::pingpong,
};

pub const FULL_CLIENTS: &[usize] = &[1, 5, 10, 15, 20, 25, 30];
pub const QUICK_CLIENTS: &[usize] = &[1, 10, 30];
const FULL_REPEAT: u64 = 100_000;
const QUICK_REPEAT: u64 = 20_000;
const DEFAULT_INFLIGHT: usize = 50;
/// The message that primes a client (never a real ball).
const START: u32 = u32::MAX;

/// What to run, from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub clients: Vec<usize>,
    pub repeat: u64,
    pub inflight: usize,
    /// Batching settings to run volley with, in order.
    pub batching: Vec<bool>,
    pub two_processes: bool,
    pub layout: Layout,
    pub runs: usize,
    pub quick: bool,
}

impl Plan {
    pub fn from_cli(cli: &crate::cli::Cli) -> crate::Result<Self> {
        let clients = cli.clients.clone().unwrap_or_else(|| {
            (if cli.quick {
                QUICK_CLIENTS
            } else {
                FULL_CLIENTS
            })
            .to_vec()
        });
        let repeat = cli
            .repeat
            .unwrap_or(if cli.quick { QUICK_REPEAT } else { FULL_REPEAT });
        let inflight = cli.inflight.unwrap_or(DEFAULT_INFLIGHT);
        if clients.is_empty() || clients.contains(&0) || repeat == 0 || inflight == 0 {
            return Err("--clients, --repeat and --inflight need values of at least 1".into());
        }
        Ok(Plan {
            clients,
            repeat,
            inflight,
            batching: if cli.no_batching {
                vec![false]
            } else {
                vec![true, false]
            },
            two_processes: cli.two_processes,
            layout: Layout::from_cli(cli),
            runs: cli.runs(),
            quick: cli.quick,
        })
    }

    /// The harness arguments, the same for Pekko and ractor_cluster.
    fn peer_args(&self) -> Vec<String> {
        let clients: Vec<String> = self.clients.iter().map(|c| c.to_string()).collect();
        vec![
            "--clients".into(),
            clients.join(","),
            "--repeat".into(),
            self.repeat.to_string(),
            "--inflight".into(),
            self.inflight.to_string(),
        ]
    }
}

pub fn system_name(batching: bool) -> &'static str {
    if batching {
        "volley (batched)"
    } else {
        "volley (unbatched)"
    }
}

fn columns() -> Vec<crate::report::Column> {
    vec![
        col("clients", "Num clients", Fmt::Plain),
        col("total", "Total [msg]", Fmt::Plain),
        col("msgs_per_sec", "Msgs/sec", Fmt::Round),
        col("elapsed_ns", "Total [ms]", Fmt::Millis),
    ]
}

fn run(ctx: &Ctx) -> crate::Result<Report> {
    let plan = Plan::from_cli(&ctx.cli)?;
    let progress = Progress::new((plan.batching.len() * plan.clients.len()) as u64);
    let peers: Vec<_> = ctx
        .peers(&progress)
        .into_iter()
        .filter_map(|(p, status)| match p {
            Peer::Pekko => Some((p, status)),
            // ractor runs this scenario on ractor_cluster, a separate build
            // of the Rust harness (`Peer::harness_for`); `ctx.peers` only
            // looked at the plain one.
            Peer::Ractor => {
                let harness = p.harness_for(SCENARIO.name);
                if ctx.cli.peers.is_none() && !harness.is_ready(&ctx.root) {
                    progress.note(
                        "not running ractor (ractor_cluster harness not built; \
                         --peers ractor builds it)",
                    );
                    return None;
                }
                let status =
                    status.and_then(|()| harness.ensure(&ctx.root, !ctx.cli.no_build, &progress));
                if let Err(why) = &status {
                    progress.note(&format!("skipping ractor (ractor_cluster): {why}"));
                }
                Some((p, status))
            }
            _ => {
                progress.note(&format!("{}: no remote-pingpong harness", p.name()));
                None
            }
        })
        .collect();
    for (_, status) in &peers {
        if status.is_ok() {
            progress.add_steps(plan.runs as u64);
        }
    }
    let mut report = Report::new(SCENARIO.name, columns());
    progress.note(&format!(
        "load before the run: {} ({} threads per system, {})",
        load(),
        plan.layout.describe(),
        if plan.two_processes {
            "two processes"
        } else {
            "one process"
        }
    ));
    for &batching in &plan.batching {
        report
            .rows
            .extend(run_volley(ctx, &plan, &progress, batching)?);
    }
    for (peer, status) in peers {
        match status {
            Err(why) => report.rows.push(skipped(peer.name(), &why)),
            Ok(()) => {
                report.rows.extend(ctx.run_peer(
                    &progress,
                    peer,
                    SCENARIO.name,
                    &plan.peer_args(),
                    "msgs_per_sec",
                ));
            }
        }
    }
    progress.finish();
    report.notes = summary(&report.rows);
    Ok(report)
}

fn run_volley(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    batching: bool,
) -> crate::Result<Vec<Row>> {
    let name = system_name(batching);
    progress.start(&format!("{name}: starting the nodes and warming up"));
    let nodes = Nodes::start(&ctx.rt, plan.layout, batching, plan.two_processes)?;
    let result = (|| {
        // Warm-up: 10 clients (or the most asked for), a tenth of R each.
        let warm_clients = plan.clients.iter().copied().max().unwrap_or(1).min(10);
        let echoes = spawn_echoes(ctx, &nodes, warm_clients)?;
        pingpong_once(&nodes, &echoes, (plan.repeat / 10).max(1000), plan.inflight)?;
        let mut rows = Vec::new();
        for &c in &plan.clients {
            progress.start(&format!(
                "{name}: {c} clients × {} round trips × {} runs",
                plan.repeat, plan.runs
            ));
            let echoes = spawn_echoes(ctx, &nodes, c)?;
            let mut runs = Vec::new();
            for _ in 0..plan.runs {
                let (total, elapsed) = pingpong_once(&nodes, &echoes, plan.repeat, plan.inflight)?;
                runs.push(row(
                    name,
                    json!({
                        "clients": c,
                        "total": total,
                        "elapsed_ns": elapsed.as_nanos() as u64,
                        "msgs_per_sec": total as f64 / elapsed.as_secs_f64(),
                        "repeat": plan.repeat,
                        "inflight": plan.inflight,
                        "batching": batching,
                        "processes": if plan.two_processes { 2 } else { 1 },
                        "threads": plan.layout.describe(),
                    }),
                ));
            }
            for e in &echoes {
                e.graceful_stop();
            }
            rows.push(crate::measure::median_row(&runs, "msgs_per_sec").expect("runs ≥ 1"));
            progress.done();
        }
        Ok(rows)
    })();
    nodes.stop(&ctx.rt);
    result
}

fn spawn_echoes(ctx: &Ctx, nodes: &Nodes, n: usize) -> crate::Result<Vec<ActorRef<Ping>>> {
    (0..n).map(|_| nodes.spawn_on_b(&ctx.rt, "echo")).collect()
}

struct Client {
    echo: ActorRef<Ping>,
    me: Option<ActorRef<u32>>,
    repeat: u64,
    inflight: u64,
    sent: u64,
    received: u64,
    done: Sender<u64>,
}

impl Client {
    fn ping(&mut self, n: u32) {
        let reply_to = self.me.clone().expect("set in pre_start");
        self.echo.tell(Ping { n, reply_to });
        self.sent += 1;
    }
}

impl Actor for Client {
    type Msg = u32;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.me = Some(ctx.myself());
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, n: u32) -> HandleResult {
        if n == START {
            for i in 0..self.inflight.min(self.repeat) {
                self.ping(i as u32);
            }
            return Ok(());
        }
        self.received += 1;
        if self.sent < self.repeat {
            self.ping(n);
        }
        if self.received == self.repeat {
            let _ = self.done.send(self.received);
        }
        Ok(())
    }
}

/// One measured run: a fresh client on A per echo, R round trips each.
/// Returns (Total = clients × R × 2, elapsed from priming to the last
/// client's last reply).
pub fn pingpong_once(
    nodes: &Nodes,
    echoes: &[ActorRef<Ping>],
    repeat: u64,
    inflight: usize,
) -> crate::Result<(u64, Duration)> {
    let (tx, rx) = channel();
    let mut clients = Vec::with_capacity(echoes.len());
    for echo in echoes {
        let (echo, done) = (echo.clone(), tx.clone());
        clients.push(nodes.a.system.spawn_anonymous(Props::new(move || Client {
            echo: echo.clone(),
            me: None,
            repeat,
            inflight: inflight as u64,
            sent: 0,
            received: 0,
            done: done.clone(),
        }))?);
    }
    drop(tx);
    let dead_before = nodes.dead_letters();
    let start = Instant::now();
    for c in &clients {
        c.tell(START);
    }
    let deadline = start + Duration::from_secs(300);
    let mut received = 0;
    for i in 0..clients.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(n) => received += n,
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "remote-pingpong timed out: {i} of {} clients done",
                    clients.len()
                )
                .into())
            }
            Err(RecvTimeoutError::Disconnected) => return Err("clients gone".into()),
        }
    }
    let elapsed = start.elapsed();
    for c in &clients {
        nodes.a.system.stop(c);
    }
    let expected = clients.len() as u64 * repeat;
    let dead = nodes.dead_letters() - dead_before;
    if received != expected || dead != 0 {
        return Err(format!(
            "remote-pingpong count mismatch: expected {expected} replies, counted {received}, \
             {dead} dead letters"
        )
        .into());
    }
    Ok((2 * expected, elapsed))
}

fn is(r: &Row, system: &str) -> bool {
    r.get("system").and_then(|s| s.as_str()) == Some(system)
}

fn at(rows: &[Row], system: &str, clients: f64) -> Option<f64> {
    rows.iter()
        .find(|r| is(r, system) && num(r, "clients") == Some(clients))
        .and_then(|r| num(r, "msgs_per_sec"))
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// Targets: ≥ 10 M msgs/s at ≥ 10 clients; ≥ 25× Pekko in the same run.
pub fn summary(rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    let batched = system_name(true);
    let min10 = rows
        .iter()
        .filter(|r| is(r, batched) && num(r, "clients").is_some_and(|c| c >= 10.0))
        .filter_map(|r| Some((num(r, "clients")?, num(r, "msgs_per_sec")?)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((c, v)) = min10 {
        notes.push(format!(
            "volley (batched) at ≥ 10 clients: lowest {:.2} M msgs/s (at {c} clients) — target ≥ 10 M: {}",
            v / 1e6,
            verdict(v >= 10e6)
        ));
    }
    let mut ratios = Vec::new();
    let mut ractor = Vec::new();
    let mut gains = Vec::new();
    for r in rows.iter().filter(|r| is(r, batched)) {
        let Some(c) = num(r, "clients") else { continue };
        let v = num(r, "msgs_per_sec").unwrap_or(0.0);
        if let Some(p) = at(rows, "pekko", c) {
            ratios.push((c, v / p));
        }
        if let Some(p) = at(rows, "ractor", c) {
            ractor.push((c, v / p));
        }
        if let Some(u) = at(rows, system_name(false), c) {
            gains.push((c, v / u));
        }
    }
    if !ratios.is_empty() {
        let list: Vec<String> = ratios
            .iter()
            .map(|(c, x)| format!("{c}: {x:.1}×"))
            .collect();
        let worst = ratios
            .iter()
            .filter(|r| r.0 >= 10.0)
            .map(|r| r.1)
            .fold(f64::MAX, f64::min);
        notes.push(format!(
            "volley (batched) / pekko by clients: {} — target ≥ 25× at ≥ 10 clients: {}",
            list.join(", "),
            verdict(worst >= 25.0)
        ));
    }
    if !ractor.is_empty() {
        let list: Vec<String> = ractor
            .iter()
            .map(|(c, x)| format!("{c}: {x:.1}×"))
            .collect();
        notes.push(format!(
            "volley (batched) / ractor (ractor_cluster) by clients: {}",
            list.join(", ")
        ));
    }
    if !gains.is_empty() {
        let list: Vec<String> = gains.iter().map(|(c, x)| format!("{c}: {x:.2}×")).collect();
        notes.push(format!(
            "batching gain (batched / unbatched): {}",
            list.join(", ")
        ));
    }
    notes.push(
        "Akka.NET v1.4.14 seed (its own machine): batched 107759..193611, unbatched 73341..129163 msgs/s"
            .into(),
    );
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn plan_defaults_and_flags() {
        let cli = crate::cli::Cli::parse_from(["volley-bench", "remote-pingpong"]);
        let plan = Plan::from_cli(&cli).unwrap();
        assert_eq!(plan.clients, FULL_CLIENTS);
        assert_eq!((plan.repeat, plan.inflight, plan.runs), (100_000, 50, 3));
        assert_eq!(plan.batching, vec![true, false]);
        assert_eq!(plan.layout, Layout::DEFAULT);
        let cli = crate::cli::Cli::parse_from([
            "volley-bench",
            "remote-pingpong",
            "--quick",
            "--no-batching",
            "--two-processes",
        ]);
        let plan = Plan::from_cli(&cli).unwrap();
        assert_eq!(plan.clients, QUICK_CLIENTS);
        assert_eq!(plan.batching, vec![false]);
        assert!(plan.two_processes);
        assert_eq!(
            plan.peer_args().join(" "),
            "--clients 1,10,30 --repeat 20000 --inflight 50"
        );
        let cli = crate::cli::Cli::parse_from(["volley-bench", "remote-pingpong", "--repeat", "0"]);
        assert!(Plan::from_cli(&cli).is_err());
    }

    #[test]
    fn summary_compares_with_targets() {
        let rows = vec![
            row(
                system_name(true),
                json!({"clients": 10, "msgs_per_sec": 6e6}),
            ),
            row(
                system_name(false),
                json!({"clients": 10, "msgs_per_sec": 3e6}),
            ),
            row("pekko", json!({"clients": 10, "msgs_per_sec": 2e5})),
            row("ractor", json!({"clients": 10, "msgs_per_sec": 4e5})),
        ];
        let notes = summary(&rows).join("\n");
        assert!(notes.contains("lowest 6.00 M"), "{notes}");
        assert!(
            notes.contains("10: 30.0×") && notes.contains("met"),
            "{notes}"
        );
        assert!(notes.contains("10: 2.00×"), "{notes}");
        assert!(notes.contains("MISSED"), "{notes}");
        assert!(
            notes.contains("volley (batched) / ractor (ractor_cluster) by clients: 10: 15.0×"),
            "{notes}"
        );
        assert!(!summary(&rows[..3]).join("\n").contains("/ ractor"));
    }

    #[test]
    fn a_small_run_in_one_process_counts_every_reply() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let nodes = Nodes::start(
            &rt,
            Layout {
                dispatcher: 1,
                io: 1,
                idle_spin_us: None,
            },
            true,
            false,
        )
        .unwrap();
        let echoes: Vec<ActorRef<Ping>> = (0..2)
            .map(|_| nodes.spawn_on_b(&rt, "echo").unwrap())
            .collect();
        let (total, elapsed) = pingpong_once(&nodes, &echoes, 500, 50).unwrap();
        assert_eq!(total, 2 * 2 * 500);
        assert!(elapsed > Duration::ZERO);
        nodes.stop(&rt);
    }
}
