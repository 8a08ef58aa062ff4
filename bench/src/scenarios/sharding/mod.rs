//! `sharding`: cluster sharding and the cluster singleton, volley against
//! Pekko Cluster Sharding 1.7.0, three member processes per system on
//! 127.0.0.1, the same settings for both and one driver for both (each
//! member prints the lines of bench/peers/README.md, "sharding"; volley's
//! is this binary's hidden `sharding-node`, [`volley_member`]). Rows:
//! tell and ask throughput to 10,000 entities, activations, rebalance
//! when a 4th member joins and when it leaves, and the singleton's
//! recovery after a kill -9 of its member. Every count is checked by the
//! entities themselves ([`rounds`]).
//!
//! volley's member runs `ClusterSharding::init_on_cluster`; where its
//! sharding lacks what Pekko's has (a cluster-wide stats query, a
//! graceful hand-off on leave), its rows say so ([`VOLLEY_CAVEATS`]).

mod members;
mod rounds;
pub mod rows;
mod volley_book;
mod volley_command;
mod volley_load;
pub mod volley_member;

use std::path::{Path, PathBuf};

use super::{Ctx, Scenario};
use crate::chart::{bars, BarPanel};
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::{measured, Report, Row};
use crate::scenarios::cluster::node::Program;
use crate::scenarios::cluster::{settings_line, stable_after_ms, Timings};
use members::Members;
use rows::ShardingRow;

pub const SCENARIO: Scenario = Scenario {
    name: "sharding",
    about:
        "cluster sharding and singleton: 10,000 entities on 3 nodes, rebalance, vs Pekko Sharding",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// What volley's sharding lacks for a row, added to that row's note.
const VOLLEY_CAVEATS: &[(&str, &str)] = &[
    (
        "tell",
        "volley's acknowledgements are EntityRef::ask with the same 10 s timeout (Pekko's: a \
         tell carrying the load's reply-to)",
    ),
    (
        "rebalance-join",
        "volley has no cluster-wide shard stats query yet: each member counts the shards of its \
         live entities, and the driver polls every member",
    ),
    (
        "rebalance-leave",
        "the leaver's region hands its shards off in coordinated shutdown (Cluster::leave runs \
         it) before the member is removed; shard counts per member from live entities, as on \
         join",
    ),
];

/// Members per system (the 3 processes).
const MEMBERS: usize = 3;

/// The run's settings, the same for both systems.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub entities: u64,
    pub tell_messages: u64,
    pub ask_messages: u64,
    pub activations: u64,
    /// Shards per entity type (Pekko's `number-of-shards`).
    pub shards: u64,
    /// How often the coordinator rebalances.
    pub rebalance_ms: u64,
    /// The least-shard strategy's limits per rebalance round.
    pub absolute_limit: u64,
    pub relative_limit: f64,
    pub heartbeat_ms: u64,
    pub pause_ms: u64,
}

impl Params {
    pub fn from_cli(cli: &crate::cli::Cli) -> Self {
        let quick = cli.quick;
        Params {
            entities: 10_000,
            // A million: at volley's rate a shorter row lasts a fraction of a
            // second, where one scheduling hiccup on 2 cores moves the figure.
            tell_messages: env_number("VOLLEY_BENCH_SHARDING_TELLS").unwrap_or(if quick {
                100_000
            } else {
                1_000_000
            }),
            ask_messages: if quick { 20_000 } else { 50_000 },
            activations: if quick { 5_000 } else { 20_000 },
            shards: 100,
            rebalance_ms: 2_000,
            absolute_limit: 20,
            relative_limit: 0.1,
            heartbeat_ms: 1_000,
            pause_ms: 3_000,
        }
    }

    pub fn timings(&self) -> Timings {
        Timings {
            heartbeat_ms: self.heartbeat_ms,
            pause_ms: self.pause_ms,
            // The resolver's stable-after for up to 5 members, as `cluster`.
            stable_after_ms: stable_after_ms(MEMBERS + 1),
        }
    }

    /// The sharding flags of `sharding-node`, before the cluster's.
    pub fn sharding_args(&self) -> Vec<String> {
        [
            ("--shards", self.shards.to_string()),
            ("--rebalance-ms", self.rebalance_ms.to_string()),
            ("--absolute-limit", self.absolute_limit.to_string()),
            ("--relative-limit", self.relative_limit.to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v])
        .collect()
    }

    fn describe(&self) -> String {
        format!(
            "both systems: {MEMBERS} member processes (a 4th joins and leaves), {} entities, \
             {} shards, least-shard allocation with rebalance limits {} absolute / {} relative \
             every {} ms, no passivation, no remembered entities; heartbeat {} ms, acceptable \
             pause {} ms, keep-majority after {} ms; {} tells, {} asks, {} activations; loads run \
             inside member {} (not the oldest)",
            self.entities,
            self.shards,
            self.absolute_limit,
            self.relative_limit,
            self.rebalance_ms,
            self.heartbeat_ms,
            self.pause_ms,
            self.timings().stable_after_ms,
            self.tell_messages,
            self.ask_messages,
            self.activations,
            rounds::DRIVER
        )
    }
}

/// A system under test: how to start its members, and what its rows'
/// notes must add (row, caveat).
struct System {
    program: Program,
    caveats: &'static [(&'static str, &'static str)],
}

fn run(ctx: &Ctx) -> crate::Result<Report<ShardingRow>> {
    let params = Params::from_cli(&ctx.cli);
    let progress = Progress::new(2);
    let mut report = Report::new(SCENARIO.name, chart);
    report.notes.push(params.describe());
    let log_dir = log_dir()?;
    report
        .notes
        .push(format!("member logs: {}", log_dir.display()));
    let volley = System {
        program: Program {
            system: "volley",
            command: std::env::current_exe()?,
            leading: vec![volley_member::NODE_COMMAND.into()],
        },
        caveats: VOLLEY_CAVEATS,
    };
    run_system(&volley, &params, &log_dir, &progress, &mut report);
    let harness = Peer::Pekko.harness_for(SCENARIO.name);
    match ctx
        .pekko_only()
        .map(|build| harness.ensure(&ctx.root, build, &progress))
    {
        None => progress.note("not running pekko (--peers does not name it)"),
        Some(Err(why)) => {
            progress.note(&format!("skipping pekko: {why}"));
            report.rows.push(Row::skipped("pekko", &why));
        }
        Some(Ok(())) => {
            let pekko = System {
                program: Program {
                    system: "pekko",
                    command: "java".into(),
                    leading: vec![
                        "-jar".into(),
                        harness.artifact(&ctx.root).display().to_string(),
                        "sharding-node".into(),
                    ],
                },
                caveats: &[],
            };
            run_system(&pekko, &params, &log_dir, &progress, &mut report);
        }
    }
    progress.finish();
    Ok(report)
}

/// Every row of one system, in one cluster: rows that fail say why.
fn run_system(
    system: &System,
    params: &Params,
    log_dir: &Path,
    progress: &Progress,
    report: &mut Report<ShardingRow>,
) {
    let name = system.program.system;
    progress.start(&format!("{name}: {MEMBERS} members"));
    let mut members = match Members::start(&system.program, params, MEMBERS, log_dir, name) {
        Ok(m) => m,
        Err(e) => {
            progress.done();
            report
                .rows
                .push(Row::skipped(name, &format!("cannot start: {e}")));
            return;
        }
    };
    let all: Vec<usize> = (0..MEMBERS).collect();
    let formed = members.await_all_up(&all, std::time::Duration::from_secs(120));
    let rows = match formed {
        Err(e) => vec![ShardingRow::failed("all", "", &format!("no cluster: {e}"))],
        Ok(()) => system_rows(&mut members, params),
    };
    let rows = with_caveats(rows, system.caveats);
    if let Some(settings) = &members.settings {
        report.notes.push(format!(
            "{name} settings in force: {}",
            settings_line(settings)
        ));
    }
    members.stop_all();
    progress.done();
    report
        .rows
        .extend(rows.into_iter().map(|r| Row::measured(name, r)));
}

/// A number from the environment variable `name`, if set.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

/// `VOLLEY_BENCH_SHARDING_ROWS=tell`: only the warm-up and the tell row
/// (for alternating builds of one change).
fn tell_only() -> bool {
    std::env::var("VOLLEY_BENCH_SHARDING_ROWS").is_ok_and(|rows| rows == "tell")
}

/// The rows of one formed cluster, in an order where each leaves the
/// cluster as the next needs it (the singleton's kill last).
fn system_rows(m: &mut Members, p: &Params) -> Vec<ShardingRow> {
    let mut rows = sharded_rows(m, p);
    if tell_only() {
        return rows;
    }
    rows.push(
        rounds::singleton_kill(m)
            .unwrap_or_else(|e| ShardingRow::failed("singleton-kill", "ms", &e.to_string())),
    );
    rows
}

/// Each row's note with the caveats for its row appended.
fn with_caveats(rows: Vec<ShardingRow>, caveats: &[(&str, &str)]) -> Vec<ShardingRow> {
    rows.into_iter()
        .map(|mut row| {
            for (_, caveat) in caveats.iter().filter(|(r, _)| *r == row.row) {
                row.note = format!("{}; {caveat}", row.note);
            }
            row
        })
        .collect()
}

/// tell, ask, activate, rebalance-join, rebalance-leave; a failed step
/// gives a failed row, and the rows after it that need it fail too.
fn sharded_rows(m: &mut Members, p: &Params) -> Vec<ShardingRow> {
    let mut rows = Vec::new();
    if let Err(e) = rounds::warm(m, p) {
        for (row, unit) in [
            ("tell", "msgs/s"),
            ("ask", "msgs/s"),
            ("activate", "activations/s"),
            ("rebalance-join", "ms"),
            ("rebalance-leave", "ms"),
        ] {
            rows.push(ShardingRow::failed(row, unit, &format!("warm-up: {e}")));
        }
        return rows;
    }
    let or_failed = |row: &str, unit: &str, r: crate::Result<ShardingRow>| {
        r.unwrap_or_else(|e| ShardingRow::failed(row, unit, &e.to_string()))
    };
    rows.push(or_failed("tell", "msgs/s", rounds::tell(m, p)));
    if tell_only() {
        return rows;
    }
    rows.push(or_failed("ask", "msgs/s", rounds::ask(m, p)));
    rows.push(or_failed(
        "activate",
        "activations/s",
        rounds::activate(m, p, 0),
    ));
    match rounds::rebalance_join(m, p) {
        Ok((row, joiner)) => {
            rows.push(row);
            rows.push(or_failed(
                "rebalance-leave",
                "ms",
                rounds::rebalance_leave(m, p, joiner),
            ));
        }
        Err(e) => {
            rows.push(ShardingRow::failed("rebalance-join", "ms", &e.to_string()));
            rows.push(ShardingRow::failed(
                "rebalance-leave",
                "ms",
                "no 4th member joined",
            ));
        }
    }
    rows
}

/// A fresh directory for the member logs of this run.
fn log_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("volley-bench-sharding-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Bars per unit: throughput (msgs/s, activations/s) and times (ms).
fn chart(report: &Report<ShardingRow>, path: &Path) -> crate::Result<()> {
    let panel = |title: &str, units: &[&str], y_label: &str| BarPanel {
        title: title.into(),
        y_label: y_label.into(),
        bars: measured(&report.rows)
            .filter(|(_, r)| units.contains(&r.unit.as_str()))
            .filter_map(|(s, r)| Some((format!("{s} {}", r.row), r.value?)))
            .collect(),
    };
    bars(
        path,
        &report.heading("sharding"),
        &[
            panel(
                "throughput (higher is better)",
                &["msgs/s", "activations/s"],
                "per second",
            ),
            panel("rebalance and singleton (lower is better)", &["ms"], "ms"),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_systems_get_the_same_sharding_flags() {
        let p = Params {
            entities: 10,
            tell_messages: 1,
            ask_messages: 1,
            activations: 1,
            shards: 100,
            rebalance_ms: 2000,
            absolute_limit: 20,
            relative_limit: 0.1,
            heartbeat_ms: 1000,
            pause_ms: 3000,
        };
        assert_eq!(
            p.sharding_args().join(" "),
            "--shards 100 --rebalance-ms 2000 --absolute-limit 20 --relative-limit 0.1"
        );
        assert_eq!(p.timings().stable_after_ms, 7000);
    }

    #[test]
    fn caveats_go_to_their_rows_only() {
        let row = |name: &str| ShardingRow::failed(name, "ms", "x");
        let rows = with_caveats(
            vec![row("tell"), row("rebalance-leave")],
            &[("rebalance-leave", "no graceful hand-off")],
        );
        assert_eq!(rows[0].note, "failed: x");
        assert_eq!(rows[1].note, "failed: x; no graceful hand-off");
    }
}
