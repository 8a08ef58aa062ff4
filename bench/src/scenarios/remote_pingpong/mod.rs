//! `remote-pingpong`: Akka.NET's RemotePingPong. Two actor systems on
//! loopback (one process, or two with `--two-processes`); C echo actors are
//! remote-spawned on B, C clients on A each do R round trips with 50 in
//! flight (primed with 50 pings). Total = C × R × 2, Msgs/sec = Total /
//! elapsed; every reply is counted by its client and the sum asserted.

mod actors;
mod recorder;

use volley::ActorRef;

use super::remote_common::{load, Layout, Nodes, Ping};
use super::remote_tls::bench_tls;
use super::{ready, Ctx, Scenario};
use crate::measure::{Throughput, Workload};
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::remote_rows::{RemotePingPongRow, Setup};
use crate::report::{measured, verdict, Report, Row};
use actors::pingpong_once;
use volley_remote::transport::TlsSettings;

pub const SCENARIO: Scenario = Scenario {
    name: "remote-pingpong",
    about: "Akka.NET RemotePingPong over loopback: C clients, 50 in flight, msgs/s",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

pub const FULL_CLIENTS: &[usize] = &[1, 5, 10, 15, 20, 25, 30];
pub const QUICK_CLIENTS: &[usize] = &[1, 10, 30];
const FULL_REPEAT: u64 = 100_000;
const QUICK_REPEAT: u64 = 20_000;
const DEFAULT_INFLIGHT: usize = 50;
/// The rows of batched volley over TLS.
const TLS_SYSTEM: &str = "volley (batched, tls)";

/// What to run, from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub clients: Vec<usize>,
    pub repeat: u64,
    pub inflight: usize,
    /// Batching settings to run volley with, in order.
    pub batching: Vec<bool>,
    /// Also run batched volley over TLS (one process only).
    pub tls: bool,
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
        let (batching, tls) = volley_runs(cli)?;
        Ok(Plan {
            clients,
            repeat,
            inflight,
            batching,
            tls,
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

/// Which volley runs `--cases` and `--no-batching` ask for: the batching
/// settings in order, and whether the TLS run follows. `--cases` may name
/// `batched`, `unbatched` and `tls` (e.g. one run only, under callgrind);
/// naming none of them runs all three, as `metrics` alone does.
fn volley_runs(cli: &crate::cli::Cli) -> crate::Result<(Vec<bool>, bool)> {
    const RUNS: [&str; 3] = ["batched", "unbatched", "tls"];
    let named: Vec<&str> = cli
        .cases
        .iter()
        .flatten()
        .map(String::as_str)
        .filter(|c| RUNS.contains(c))
        .collect();
    if let Some(other) = cli
        .cases
        .iter()
        .flatten()
        .find(|c| !RUNS.contains(&c.as_str()) && c.as_str() != "metrics")
    {
        return Err(format!("--cases {other}: expected batched, unbatched, tls or metrics").into());
    }
    let wants = |c: &str| named.is_empty() || named.contains(&c);
    let batching = if cli.no_batching {
        vec![false]
    } else {
        [true, false]
            .into_iter()
            .filter(|&b| wants(if b { "batched" } else { "unbatched" }))
            .collect()
    };
    Ok((batching, wants("tls") && !cli.no_batching))
}

pub fn system_name(batching: bool) -> &'static str {
    if batching {
        "volley (batched)"
    } else {
        "volley (unbatched)"
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<RemotePingPongRow>> {
    let plan = Plan::from_cli(&ctx.cli)?;
    let progress = Progress::new((plan.batching.len() * plan.clients.len()) as u64);
    let wants_metrics = ctx
        .cli
        .cases
        .as_ref()
        .is_some_and(|cases| cases.iter().any(|c| c == "metrics"));
    if wants_metrics {
        progress.add_steps(2 * recorder::ROUNDS as u64);
    }
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
    progress.add_steps((ready(&peers) * plan.runs) as u64);
    let mut report = Report::new(SCENARIO.name, crate::chart::remote_pingpong);
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
        let rows = run_volley(ctx, &plan, &progress, batching, None)?;
        let name = system_name(batching);
        report
            .rows
            .extend(rows.into_iter().map(|r| Row::measured(name, r)));
    }
    // Batched, over TLS, in this run (one process only).
    if !plan.two_processes && plan.tls {
        progress.add_steps(plan.clients.len() as u64);
        let tls = bench_tls()?;
        let rows = run_volley(ctx, &plan, &progress, true, Some(&tls))?;
        report
            .rows
            .extend(rows.into_iter().map(|r| Row::measured(TLS_SYSTEM, r)));
    }
    let recorder = match wants_metrics {
        true => recorder::note(ctx, &plan, &progress)?,
        false => None,
    };
    report.rows.extend(ctx.run_peers(
        &progress,
        peers,
        SCENARIO.name,
        &plan.peer_args(),
        |r: &RemotePingPongRow| r.msgs_per_sec,
    ));
    progress.finish();
    report.notes = summary(&report.rows);
    report.notes.extend(recorder);
    Ok(report)
}

fn run_volley(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    batching: bool,
    tls: Option<&TlsSettings>,
) -> crate::Result<Vec<RemotePingPongRow>> {
    let name = if tls.is_some() {
        TLS_SYSTEM
    } else {
        system_name(batching)
    };
    progress.start(&format!("{name}: starting the nodes and warming up"));
    Nodes::run_with(
        &ctx.rt,
        plan.layout,
        batching,
        plan.two_processes,
        tls,
        |nodes| {
            // Warm-up: 10 clients (or the most asked for), a tenth of R each.
            let warm_clients = plan.clients.iter().copied().max().unwrap_or(1).min(10);
            let mut warm = Clients::spawn(ctx, nodes, plan, batching, warm_clients)?;
            warm.tls = tls.is_some();
            warm.run((plan.repeat / 10).max(1000))?;
            let mut rows = Vec::new();
            for &c in &plan.clients {
                progress.start(&format!(
                    "{name}: {c} clients × {} round trips × {} runs",
                    plan.repeat, plan.runs
                ));
                let mut clients = Clients::spawn(ctx, nodes, plan, batching, c)?;
                clients.tls = tls.is_some();
                let row = clients.measure(plan.repeat, plan.runs)?;
                for e in &clients.echoes {
                    e.graceful_stop();
                }
                rows.push(row);
                progress.done();
            }
            Ok(rows)
        },
    )
}

/// C clients on node A, each with its own echo on node B.
struct Clients<'a> {
    nodes: &'a Nodes,
    plan: &'a Plan,
    batching: bool,
    /// The nodes run TLS.
    tls: bool,
    echoes: Vec<ActorRef<Ping>>,
}

impl<'a> Clients<'a> {
    /// Remote-spawns `n` echoes on B.
    fn spawn(
        ctx: &Ctx,
        nodes: &'a Nodes,
        plan: &'a Plan,
        batching: bool,
        n: usize,
    ) -> crate::Result<Self> {
        let echoes = (0..n)
            .map(|_| nodes.spawn_on_b(&ctx.rt, "echo"))
            .collect::<crate::Result<_>>()?;
        Ok(Clients {
            nodes,
            plan,
            batching,
            tls: false,
            echoes,
        })
    }
}

impl Workload for Clients<'_> {
    type Run = Throughput;
    type Row = RemotePingPongRow;

    fn run(&mut self, repeat: u64) -> crate::Result<Throughput> {
        pingpong_once(self.nodes, &self.echoes, repeat, self.plan.inflight)
    }

    fn row(&self, repeat: u64, run: Throughput) -> RemotePingPongRow {
        RemotePingPongRow {
            clients: self.echoes.len() as u64,
            total: run.count,
            elapsed_ns: run.elapsed_ns(),
            msgs_per_sec: run.per_sec(),
            repeat: Some(repeat),
            inflight: Some(self.plan.inflight as u64),
            batching: Some(self.batching),
            setup: Some(Setup {
                tls: self.tls,
                ..self.plan.layout.setup(self.plan.two_processes)
            }),
        }
    }

    fn figure(row: &RemotePingPongRow) -> f64 {
        row.msgs_per_sec
    }
}

/// `system`'s msgs/s at `clients`.
fn at(rows: &[Row<RemotePingPongRow>], system: &str, clients: u64) -> Option<f64> {
    measured(rows)
        .find(|(s, r)| *s == system && r.clients == clients)
        .map(|(_, r)| r.msgs_per_sec)
}

/// Targets: ≥ 10 M msgs/s at ≥ 10 clients; ≥ 25× Pekko in the same run.
pub fn summary(rows: &[Row<RemotePingPongRow>]) -> Vec<String> {
    let mut notes = Vec::new();
    let batched = system_name(true);
    let batched_rows = || {
        measured(rows)
            .filter(|(s, _)| *s == batched)
            .map(|(_, r)| r)
    };
    let min10 = batched_rows()
        .filter(|r| r.clients >= 10)
        .map(|r| (r.clients, r.msgs_per_sec))
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
    let mut tls = Vec::new();
    for r in batched_rows() {
        let (c, v) = (r.clients, r.msgs_per_sec);
        if let Some(p) = at(rows, "pekko", c) {
            ratios.push((c, v / p));
        }
        if let Some(p) = at(rows, "ractor", c) {
            ractor.push((c, v / p));
        }
        if let Some(u) = at(rows, system_name(false), c) {
            gains.push((c, v / u));
        }
        if let Some(t) = at(rows, TLS_SYSTEM, c) {
            tls.push(format!("{c}: {:.2}×", t / v));
        }
    }
    if !tls.is_empty() {
        notes.push(format!(
            "TLS / plaintext (batched) by clients, this run: {} — target ≥ 0.7×",
            tls.join(", ")
        ));
    }
    if !ratios.is_empty() {
        let list: Vec<String> = ratios
            .iter()
            .map(|(c, x)| format!("{c}: {x:.1}×"))
            .collect();
        let worst = ratios
            .iter()
            .filter(|r| r.0 >= 10)
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
        let cli =
            crate::cli::Cli::parse_from(["volley-bench", "remote-pingpong", "--cases", "batched"]);
        let plan = Plan::from_cli(&cli).unwrap();
        assert_eq!((plan.batching, plan.tls), (vec![true], false));
        let cli =
            crate::cli::Cli::parse_from(["volley-bench", "remote-pingpong", "--cases", "metrics"]);
        let plan = Plan::from_cli(&cli).unwrap();
        assert_eq!((plan.batching, plan.tls), (vec![true, false], true));
        let cli = crate::cli::Cli::parse_from(["volley-bench", "remote-pingpong", "--cases", "x"]);
        assert!(Plan::from_cli(&cli).is_err());
    }

    #[test]
    fn summary_compares_with_targets() {
        let row = |system, rate| {
            Row::measured(
                system,
                RemotePingPongRow {
                    clients: 10,
                    total: 1000,
                    elapsed_ns: 1,
                    msgs_per_sec: rate,
                    repeat: None,
                    inflight: None,
                    batching: None,
                    setup: None,
                },
            )
        };
        let rows = vec![
            row(system_name(true), 6e6),
            row(system_name(false), 3e6),
            row("pekko", 2e5),
            row("ractor", 4e5),
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
}
