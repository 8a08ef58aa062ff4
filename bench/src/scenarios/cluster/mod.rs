//! `cluster`: membership under joins, a kill -9, a graceful leave and a
//! partition, and receptionist propagation, at N = 3, 5, 7 members (one OS
//! process each), volley against Pekko Cluster at the same timings. Per
//! repetition a fresh cluster (see [`round`]); per row the median and the
//! slowest repetition. One driver measures both systems: each member is a
//! process printing the same event lines (volley's is this binary's
//! hidden `cluster-node`, [`volley_member`]).

pub(crate) mod node;
pub(crate) mod round;
pub(crate) mod view;
pub mod volley_member;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Ctx, Scenario};
use crate::chart::{bars, BarPanel};
use crate::measure::median_by;
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::cluster_rows::ClusterRow;
use crate::report::{measured, Report, Row};
use node::Program;

pub const SCENARIO: Scenario = Scenario {
    name: "cluster",
    about:
        "cluster membership: join, kill -9, leave, receptionist at 3/5/7 nodes, vs Pekko Cluster",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// A measured case, in the order a repetition runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// The last member's actor system started → every member sees every
    /// member Up.
    Join,
    /// `register` on one member → the service listed on every member.
    Receptionist,
    /// kill -9 of one member → Unreachable on every survivor.
    KillUnreachable,
    /// The same kill → Removed on every survivor (the split-brain
    /// resolver's decision after stable-after, then the leader's removal).
    KillRemoved,
    /// `leave` on one member → Removed on every other member.
    Leave,
    /// The last (N-1)/2 members cut off from the others (relays close the
    /// links between the sides) → every member of the majority has seen
    /// every one of the minority Removed (keep-majority).
    PartitionRemoved,
    /// The same cut → every member of the minority has shut down (its
    /// split-brain resolver downed its own side).
    PartitionMinorityDown,
}

impl Case {
    pub const ALL: [Case; 7] = [
        Case::Join,
        Case::Receptionist,
        Case::KillUnreachable,
        Case::KillRemoved,
        Case::Leave,
        Case::PartitionRemoved,
        Case::PartitionMinorityDown,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Case::Join => "join",
            Case::Receptionist => "receptionist",
            Case::KillUnreachable => "kill-unreachable",
            Case::KillRemoved => "kill-removed",
            Case::Leave => "leave",
            Case::PartitionRemoved => "partition-removed",
            Case::PartitionMinorityDown => "partition-minority-down",
        }
    }
}

/// The failure-detector and split-brain-resolver timings, the same for
/// both systems (Pekko: `failure-detector.heartbeat-interval`,
/// `acceptable-heartbeat-pause`, `split-brain-resolver.stable-after`).
#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    pub heartbeat_ms: u64,
    pub pause_ms: u64,
    pub stable_after_ms: u64,
}

/// Pekko's recommended minimum stable-after for a cluster of `n` members
/// (its split-brain-resolver documentation; the table of
/// docs/design/cluster.md §4.1, taking the next row up), which is also
/// what volley proposes as its default.
pub fn stable_after_ms(n: usize) -> u64 {
    const TABLE: [(usize, u64); 6] = [
        (5, 7_000),
        (10, 10_000),
        (20, 13_000),
        (50, 17_000),
        (100, 20_000),
        (1000, 30_000),
    ];
    TABLE
        .iter()
        .find(|(size, _)| n <= *size)
        .map_or(30_000, |(_, ms)| *ms)
}

/// The run's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub sizes: Vec<usize>,
    /// Run the membership round (join .. leave).
    pub membership: bool,
    /// Run the partition round (members behind relays).
    pub partition: bool,
    pub repetitions: usize,
    pub heartbeat_ms: u64,
    pub pause_ms: u64,
}

impl Params {
    pub fn from_cli(cli: &crate::cli::Cli) -> crate::Result<Self> {
        let sizes = match &cli.nodes {
            Some(sizes) => sizes.clone(),
            None if cli.quick => vec![3],
            None => vec![3, 5, 7],
        };
        if let Some(n) = sizes.iter().find(|&&n| n < 3) {
            return Err(format!("--nodes {n}: a cluster case needs at least 3 members").into());
        }
        let rounds = cli
            .cases
            .clone()
            .unwrap_or_else(|| vec!["membership".into(), "partition".into()]);
        if let Some(other) = rounds
            .iter()
            .find(|r| !matches!(r.as_str(), "membership" | "partition"))
        {
            return Err(format!("--cases {other}: expected membership and/or partition").into());
        }
        Ok(Params {
            sizes,
            membership: rounds.iter().any(|r| r == "membership"),
            partition: rounds.iter().any(|r| r == "partition"),
            repetitions: cli.runs(),
            // Pekko's defaults; design §1.5 compares volley's SWIM
            // detection with them.
            heartbeat_ms: 1000,
            pause_ms: 3000,
        })
    }

    /// Whether `case` is in a round this run has.
    pub fn runs(&self, case: Case) -> bool {
        if matches!(case, Case::PartitionRemoved | Case::PartitionMinorityDown) {
            self.partition
        } else {
            self.membership
        }
    }

    pub fn timings(&self, n: usize) -> Timings {
        Timings {
            heartbeat_ms: self.heartbeat_ms,
            pause_ms: self.pause_ms,
            stable_after_ms: stable_after_ms(n),
        }
    }

    /// The settings line of the notes.
    pub fn describe(&self) -> String {
        let stable: Vec<String> = self
            .sizes
            .iter()
            .map(|&n| format!("{} ms at {n}", stable_after_ms(n)))
            .collect();
        format!(
            "both systems: heartbeat interval {} ms, acceptable pause {} ms (volley: SWIM's \
             probe_period and suspect_to_down_after), keep-majority, \
             stable-after {} (Pekko's recommended minimum by size); {} repetition(s) per size, \
             a fresh cluster each (one for the membership cases, one behind relays for the \
             partition); seeds: the first 3 members",
            self.heartbeat_ms,
            self.pause_ms,
            stable.join(", "),
            self.repetitions
        )
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<ClusterRow>> {
    let params = Params::from_cli(&ctx.cli)?;
    let pekko = ctx.pekko_only();
    let systems = 1 + usize::from(pekko.is_some());
    let rounds = systems
        * params.sizes.len()
        * params.repetitions
        * (usize::from(params.membership) + usize::from(params.partition));
    let progress = Progress::new(rounds as u64);
    progress.note(&format!(
        "load before the run: {}",
        super::remote_common::load()
    ));
    let mut report = Report::new(SCENARIO.name, chart);
    report.notes.push(params.describe());
    let log_dir = log_dir()?;
    report
        .notes
        .push(format!("node logs: {}", log_dir.display()));
    let volley = Program::volley()?;
    let (rows, notes) = run_system(&volley, &params, &log_dir, &progress)?;
    report.rows.extend(rows);
    report.notes.extend(notes);
    let harness = Peer::Pekko.harness_for(SCENARIO.name);
    match pekko.map(|build| harness.ensure(&ctx.root, build, &progress)) {
        None => progress.note("not running pekko (--peers does not name it)"),
        Some(Err(why)) => {
            progress.note(&format!("skipping pekko: {why}"));
            report.rows.push(Row::skipped("pekko", &why));
        }
        Some(Ok(())) => {
            let program = Program::pekko(&harness.artifact(&ctx.root));
            let (rows, notes) = run_system(&program, &params, &log_dir, &progress)?;
            report.rows.extend(rows);
            report.notes.extend(notes);
        }
    }
    progress.note(&format!(
        "load after the run: {}",
        super::remote_common::load()
    ));
    progress.finish();
    Ok(report)
}

/// Every size and repetition of one system: its rows and notes.
fn run_system(
    program: &Program,
    params: &Params,
    log_dir: &Path,
    progress: &Progress,
) -> crate::Result<(Vec<Row<ClusterRow>>, Vec<String>)> {
    let system = program.system;
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for &n in &params.sizes {
        let timings = params.timings(n);
        let mut outcomes = Vec::new();
        let mut partitions: Vec<Vec<round::Measured>> = Vec::new();
        let mut unknown_links = 0;
        let mut traffic: Vec<f64> = Vec::new();
        for rep in 0..params.repetitions {
            let what = format!(
                "{system} {n} nodes, repetition {}/{}",
                rep + 1,
                params.repetitions
            );
            let prefix = format!("{system}-n{n}-r{rep}");
            if params.membership {
                progress.start(&format!("{what}: membership"));
                let result = round::run(program, n, &timings, log_dir, &prefix)
                    .map(|o| (o.clone(), o.failure));
                progress.done();
                let what = format!("{what}, membership");
                outcomes.extend(keep(progress, &mut notes, &what, result));
            }
            if params.partition {
                progress.start(&format!("{what}: partition"));
                let prefix = format!("{prefix}-partition");
                let result = round::run_partition(program, n, &timings, log_dir, &prefix)
                    .map(|o| (o.clone(), o.failure));
                progress.done();
                let what = format!("{what}, partition");
                if let Some(o) = keep(progress, &mut notes, &what, result) {
                    unknown_links += o.unknown_links;
                    traffic.extend(o.bytes_per_member_s);
                    partitions.push(o.cases);
                }
            }
        }
        if params.partition {
            notes.push(format!(
                "{system} {n} nodes: relayed connections whose member was not found (never cut): {unknown_links}"
            ));
        }
        if let Some(p50) = median_by(traffic.clone(), |&x| x) {
            notes.push(format!(
                "{system} {n} nodes: traffic at rest, every byte between the members over {} s after the join (relays of the partition round): {p50:.0} B per member per second (median of {})",
                round::QUIET.as_secs(),
                traffic.len()
            ));
        }
        if let Some(first) = outcomes.first() {
            notes.push(format!(
                "{system} settings in force: {}",
                settings_line(&first.settings)
            ));
            let startup: Vec<f64> = outcomes.iter().map(|o| o.startup_ms).collect();
            notes.push(format!(
                "{system} {n} nodes: process spawn to the last node started (not in join): {}",
                spread(&startup)
            ));
        }
        let mut measured: Vec<Vec<round::Measured>> =
            outcomes.into_iter().map(|o| o.cases).collect();
        measured.extend(partitions);
        let cases: Vec<Case> = Case::ALL.into_iter().filter(|c| params.runs(*c)).collect();
        rows.extend(summarise(system, n, &cases, &measured));
    }
    Ok((rows, notes))
}

/// What a round measured, if anything; why it stopped early (or failed)
/// goes to stderr and the notes.
fn keep<T>(
    progress: &Progress,
    notes: &mut Vec<String>,
    what: &str,
    result: crate::Result<(T, Option<String>)>,
) -> Option<T> {
    let (kept, why) = match result {
        Ok((t, why)) => (Some(t), why),
        Err(e) => (None, Some(e.to_string())),
    };
    if let Some(why) = why {
        progress.note(&format!("{what}: {why}"));
        notes.push(format!("{what} stopped early: {why}"));
    }
    kept
}

/// One row per case of the repetitions that measured it; a skipped row
/// when none did.
fn summarise(
    system: &str,
    n: usize,
    cases: &[Case],
    rounds: &[Vec<round::Measured>],
) -> Vec<Row<ClusterRow>> {
    cases
        .iter()
        .map(|&case| {
            let samples: Vec<&round::Measured> = rounds
                .iter()
                .flat_map(|r| r.iter().filter(|m| m.case == case))
                .collect();
            let ms: Vec<f64> = samples.iter().map(|m| m.ms).collect();
            match median_by(ms.clone(), |&x| x) {
                None => Row::skipped(
                    system,
                    &format!("{n} nodes {}: no repetition got this far", case.name()),
                ),
                Some(p50) => Row::measured(
                    system,
                    ClusterRow {
                        nodes: n as u64,
                        case: case.name().to_string(),
                        ms_p50: round1(p50),
                        ms_max: round1(ms.iter().copied().fold(f64::MIN, f64::max)),
                        false_downs: samples.iter().map(|m| m.false_downs).sum(),
                        lost_messages: samples.iter().filter_map(|m| m.lost).reduce(|a, b| a + b),
                    },
                ),
            }
        })
        .collect()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// "min / median / max ms".
fn spread(ms: &[f64]) -> String {
    let min = ms.iter().copied().fold(f64::MAX, f64::min);
    let max = ms.iter().copied().fold(f64::MIN, f64::max);
    let p50 = median_by(ms.to_vec(), |&x| x).unwrap_or(0.0);
    format!("{min:.0} / {p50:.0} / {max:.0} ms (min / median / max)")
}

/// The settings of a `started` line, without the line's own fields.
pub(crate) fn settings_line(fields: &serde_json::Map<String, Value>) -> String {
    fields
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "t_ms" | "event" | "node" | "pid"))
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str().map_or_else(|| v.to_string(), str::to_string)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A fresh directory for the node logs of this run.
fn log_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("volley-bench-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Bars of the median per size and case: membership changes, and the kill.
fn chart(report: &Report<ClusterRow>, path: &Path) -> crate::Result<()> {
    let panel = |title: &str, cases: &[&str]| BarPanel {
        title: title.into(),
        y_label: "ms (median)".into(),
        bars: measured(&report.rows)
            .filter(|(_, r)| cases.contains(&r.case.as_str()))
            .map(|(s, r)| (format!("{s} {} {}", r.nodes, r.case), r.ms_p50))
            .collect(),
    };
    bars(
        path,
        &report.heading("cluster"),
        &[
            panel(
                "join, receptionist, leave",
                &["join", "receptionist", "leave"],
            ),
            panel(
                "kill -9 and partition",
                &[
                    "kill-unreachable",
                    "kill-removed",
                    "partition-removed",
                    "partition-minority-down",
                ],
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_after_follows_pekkos_table() {
        assert_eq!(stable_after_ms(3), 7_000);
        assert_eq!(stable_after_ms(5), 7_000);
        assert_eq!(stable_after_ms(7), 10_000);
        assert_eq!(stable_after_ms(5000), 30_000);
    }

    #[test]
    fn rows_take_median_max_and_sum_of_false_downs() {
        let round = |join: f64, downs: u64| {
            vec![round::Measured {
                case: Case::Join,
                ms: join,
                false_downs: downs,
                lost: Some(downs * 2),
            }]
        };
        let rows = summarise(
            "volley",
            5,
            &Case::ALL,
            &[round(300.0, 0), round(100.0, 1), round(200.0, 0)],
        );
        assert_eq!(rows.len(), Case::ALL.len());
        let join = rows[0].metrics().unwrap();
        assert_eq!(
            (
                join.ms_p50,
                join.ms_max,
                join.false_downs,
                join.lost_messages
            ),
            (200.0, 300.0, 1, Some(2))
        );
        assert_eq!(join.nodes, 5);
        assert!(rows[1].is_skipped());
    }

    #[test]
    fn settings_leave_out_the_line_fields() {
        let line = r#"{"t_ms":1.0,"event":"started","node":"a:1","pid":3,"heartbeat_ms":1000,"threshold":"8.0"}"#;
        let fields: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        assert_eq!(settings_line(&fields), "heartbeat_ms=1000 threshold=8.0");
    }
}
