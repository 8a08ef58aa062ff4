//! `failover`: remote failure handling, volley against Pekko Artery at the
//! same failure-detector settings. Each system runs as two OS processes:
//! the watcher (here for volley, the harness JVM for Pekko) and the
//! watched node (this binary re-run as `failover-node`, or a second JVM).
//! Per case, a fresh pair of nodes; one watcher actor watches `watched`
//! actors on the other node (remote death watch) while small messages
//! stream to them, the detector settles, then:
//!
//! - `kill`: SIGKILL of the watched node: time to every `Terminated`, and
//!   exactly one per watched actor;
//! - `stall-short`: SIGSTOP for less than the acceptable pause, SIGCONT:
//!   no `Terminated` during a window after;
//! - `stall-long`: SIGSTOP until every `Terminated` arrives: time to it;
//! - `restart`: SIGKILL and a new node on the same port at once: time from
//!   the new node being up to its first answer;
//! - `large-messages`: 10 MB messages beside the heartbeats: no
//!   `Terminated`, the node stays reachable.

mod node;
mod volley;

use std::path::Path;

use serde_json::Value;

use super::{Ctx, Scenario};
use crate::chart::{bars, BarPanel};
use crate::peers::{self, Peer};
use crate::progress::Progress;
use crate::report::failover_rows::FailoverRow;
use crate::report::{measured, verdict, Report, Row};

pub use node::{serve, NODE_COMMAND};

pub const SCENARIO: Scenario = Scenario {
    name: "failover",
    about: "remote death watch under kill -9, SIGSTOP, restart and 10 MB messages, vs Pekko",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// A failure case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Kill,
    StallShort,
    StallLong,
    Restart,
    LargeMessages,
}

impl Case {
    pub const ALL: [Case; 5] = [
        Case::Kill,
        Case::StallShort,
        Case::StallLong,
        Case::Restart,
        Case::LargeMessages,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Case::Kill => "kill",
            Case::StallShort => "stall-short",
            Case::StallLong => "stall-long",
            Case::Restart => "restart",
            Case::LargeMessages => "large-messages",
        }
    }

    pub fn from_name(name: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The watched node fails in this case (a `Terminated` per watched
    /// actor is right).
    pub fn fails(self) -> bool {
        !matches!(self, Case::StallShort | Case::LargeMessages)
    }
}

/// The run's settings, the same for both systems (the Pekko harness gets
/// them as flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub cases: Vec<Case>,
    /// Remote actors watched.
    pub watched: usize,
    /// The failure detector: heartbeat interval, acceptable pause, phi
    /// threshold (the minimum standard deviation, 100 ms, and the sample
    /// size, 200, are both systems' defaults).
    pub heartbeat_ms: u64,
    pub pause_ms: u64,
    pub threshold: f64,
    /// From the watch to the failure: the detector's history fills.
    pub settle_ms: u64,
    /// stall-short's SIGSTOP.
    pub stall_short_ms: u64,
    /// After the failure is detected (or after SIGCONT): further
    /// `Terminated` are counted this long.
    pub window_ms: u64,
    /// Longest wait for detection or for the restarted node's answer.
    pub detect_timeout_ms: u64,
    /// large-messages' stream.
    pub large_ms: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            cases: Case::ALL.to_vec(),
            watched: 10,
            heartbeat_ms: 200,
            pause_ms: 1000,
            threshold: 10.0,
            settle_ms: 2000,
            stall_short_ms: 700,
            window_ms: 3000,
            detect_timeout_ms: 15_000,
            large_ms: 10_000,
        }
    }
}

impl Params {
    pub fn from_cli(cli: &crate::cli::Cli) -> crate::Result<Self> {
        let mut p = Params::default();
        if cli.quick {
            p.window_ms = 1500;
            p.large_ms = 3000;
        }
        if let Some(w) = cli.watched {
            p.watched = w.max(1);
        }
        if let Some(names) = &cli.cases {
            p.cases = names
                .iter()
                .map(|n| {
                    Case::from_name(n).ok_or_else(|| {
                        format!(
                            "unknown case `{n}` (expected some of {})",
                            Case::ALL.map(Case::name).join(",")
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        Ok(p)
    }

    /// The Pekko harness's flags for these settings.
    pub fn harness_args(&self) -> Vec<String> {
        let cases: Vec<&str> = self.cases.iter().map(|c| c.name()).collect();
        [
            ("--cases", cases.join(",")),
            ("--watched", self.watched.to_string()),
            ("--heartbeat-ms", self.heartbeat_ms.to_string()),
            ("--pause-ms", self.pause_ms.to_string()),
            ("--threshold", self.threshold.to_string()),
            ("--settle-ms", self.settle_ms.to_string()),
            ("--stall-short-ms", self.stall_short_ms.to_string()),
            ("--window-ms", self.window_ms.to_string()),
            ("--detect-timeout-ms", self.detect_timeout_ms.to_string()),
            ("--large-ms", self.large_ms.to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v])
        .collect()
    }

    /// The settings line of the notes.
    pub fn describe(&self) -> String {
        format!(
            "failure detector, both systems: heartbeat interval {} ms, acceptable pause {} ms, \
             threshold {}, min std deviation 100 ms, 200 samples; checked every {} ms \
             (volley's monitor tick; Pekko's unreachable-nodes-reaper-interval set to match). \
             {} watched actors; stall-short stops the node {} ms; window after a failure {} ms",
            self.heartbeat_ms,
            self.pause_ms,
            self.threshold,
            self.check_ms(),
            self.watched,
            self.stall_short_ms,
            self.window_ms
        )
    }

    /// How often both systems evaluate their detectors.
    pub fn check_ms(&self) -> u64 {
        (self.heartbeat_ms / 2).max(1)
    }

    /// The detection bound: after the failure, phi reaches the threshold
    /// within [`phi_crossing_ms`] (the last heartbeat came at most then),
    /// and the next check sees it within one check interval.
    pub fn bound_ms(&self) -> f64 {
        phi_crossing_ms(
            self.heartbeat_ms as f64,
            self.pause_ms as f64,
            100.0,
            self.threshold,
        ) + self.check_ms() as f64
    }
}

/// Milliseconds after the last heartbeat at which the phi accrual detector
/// (Akka's, and volley's: the logistic approximation of the normal
/// distribution, mean = interval + acceptable pause) reaches `threshold`
/// for perfectly regular heartbeats (so the standard deviation is its
/// floor `min_std_ms`).
pub fn phi_crossing_ms(interval_ms: f64, pause_ms: f64, min_std_ms: f64, threshold: f64) -> f64 {
    let mean = interval_ms + pause_ms;
    let phi = |t: f64| {
        let y = (t - mean) / min_std_ms;
        let e = (-y * (1.5976 + 0.070566 * y * y)).exp();
        if t > mean {
            -(e / (1.0 + e)).log10()
        } else {
            -(1.0 - 1.0 / (1.0 + e)).log10()
        }
    };
    let (mut lo, mut hi) = (0.0, mean + 100.0 * min_std_ms);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if phi(mid) >= threshold {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// What one case measured: its row, and a line for the notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub row: FailoverRow,
    pub detail: String,
}

fn run(ctx: &Ctx) -> crate::Result<Report<FailoverRow>> {
    let params = Params::from_cli(&ctx.cli)?;
    // Only volley and Pekko: the other peers have no remote death watch.
    let pekko = ctx.pekko_only();
    let progress = Progress::new(params.cases.len() as u64 + u64::from(pekko.is_some()));
    progress.note(&format!(
        "load before the run: {}",
        super::remote_common::load()
    ));
    let mut report = Report::new(SCENARIO.name, chart);
    let mut details = Vec::new();
    for &case in &params.cases {
        progress.start(&format!("volley: {}", case.name()));
        let outcome = volley::run_case(&ctx.rt, &params, case);
        progress.done();
        match outcome {
            Ok(o) => {
                details.push(format!("volley {}: {}", case.name(), o.detail));
                report.rows.push(Row::measured("volley", o.row));
            }
            Err(e) => {
                progress.note(&format!("volley {}: failed: {e}", case.name()));
                report.rows.push(Row::skipped(
                    "volley",
                    &format!("{} failed: {e}", case.name()),
                ));
            }
        }
    }
    if let Some(build) = pekko {
        match Peer::Pekko.harness().ensure(&ctx.root, build, &progress) {
            Err(why) => {
                progress.note(&format!("skipping pekko: {why}"));
                report.rows.push(Row::skipped("pekko", &why));
            }
            Ok(()) => {
                progress.start("pekko: every case (two JVMs per case)");
                let result = peers::run::<FailoverRow>(
                    &ctx.root,
                    Peer::Pekko,
                    SCENARIO.name,
                    &params.harness_args(),
                );
                progress.done();
                match result {
                    Ok(lines) => {
                        for line in lines {
                            let detail = line.printed.get("detail").and_then(Value::as_str);
                            if let Some(d) = detail {
                                details.push(format!("pekko {}: {d}", line.metrics.case));
                            }
                            // The row carries the contract's fields only.
                            report.rows.push(Row::measured("pekko", line.metrics));
                        }
                    }
                    Err(why) => {
                        progress.note(&format!("pekko: {why}"));
                        report
                            .rows
                            .push(Row::skipped("pekko", &format!("failed: {why}")));
                    }
                }
            }
        }
    } else {
        progress.note("not running pekko (--peers does not name it)");
    }
    progress.finish();
    report.notes.push(params.describe());
    report.notes.extend(verdicts(&report.rows, &params));
    report.notes.extend(details);
    Ok(report)
}

/// The targets, per system, under the table: detection within the bound,
/// exactly one `Terminated` per watched actor and none false, the watcher
/// up; and volley against Pekko where both ran.
pub fn verdicts(rows: &[Row<FailoverRow>], params: &Params) -> Vec<String> {
    let bound = params.bound_ms();
    let mut notes = vec![format!(
        "detection bound: {bound:.0} ms after the failure (phi reaches {} {:.0} ms after the last \
         heartbeat, plus one {} ms check)",
        params.threshold,
        bound - params.check_ms() as f64,
        params.check_ms()
    )];
    for (system, r) in measured(rows) {
        let mut checks = Vec::new();
        let exact = if Case::from_name(&r.case).is_some_and(Case::fails) {
            r.terminated == r.watched
        } else {
            r.terminated == 0
        };
        checks.push(format!(
            "Terminated as expected: {}",
            verdict(exact && r.false_terminated == 0)
        ));
        checks.push(format!("watcher up: {}", verdict(r.watcher_alive)));
        if matches!(r.case.as_str(), "kill" | "stall-long") {
            checks.push(format!(
                "detected within {bound:.0} ms: {}",
                verdict(r.detect_ms.is_some_and(|d| d <= bound))
            ));
        }
        if r.case == "restart" {
            checks.push(format!(
                "new incarnation answered: {}",
                verdict(r.reassociate_ms.is_some())
            ));
        }
        notes.push(format!("{system} {}: {}", r.case, checks.join(", ")));
    }
    let find = |system: &str, case: &str| {
        measured(rows)
            .find(|(s, r)| *s == system && r.case == case)
            .map(|(_, r)| r.clone())
    };
    for case in ["kill", "stall-long", "restart"] {
        let figure = |r: FailoverRow| {
            if case == "restart" {
                r.reassociate_ms
            } else {
                r.detect_ms
            }
        };
        let (Some(v), Some(p)) = (
            find("volley", case).and_then(figure),
            find("pekko", case).and_then(figure),
        ) else {
            continue;
        };
        notes.push(format!(
            "{case}: volley {v:.0} ms vs pekko {p:.0} ms — faster than pekko: {}",
            verdict(v < p)
        ));
    }
    notes
}

/// Bars: detection (kill, stall-long) and reassociation (restart) per
/// system.
fn chart(report: &Report<FailoverRow>, path: &Path) -> crate::Result<()> {
    let panel = |title: &str, cases: &[&str], figure: fn(&FailoverRow) -> Option<f64>| BarPanel {
        title: title.into(),
        y_label: "ms".into(),
        bars: measured(&report.rows)
            .filter(|(_, r)| cases.contains(&r.case.as_str()))
            .filter_map(|(s, r)| Some((format!("{s} {}", r.case), figure(r)?)))
            .collect(),
    };
    bars(
        path,
        &report.heading("failover"),
        &[
            panel("failure to Terminated", &["kill", "stall-long"], |r| {
                r.detect_ms
            }),
            panel("restart: up to first answer", &["restart"], |r| {
                r.reassociate_ms
            }),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_follows_the_phi_formula() {
        // mean 1200 ms, deviation 100 ms: phi = 10 at y ≈ 5.8.
        let t = phi_crossing_ms(200.0, 1000.0, 100.0, 10.0);
        assert!((1770.0..1790.0).contains(&t), "{t}");
        let p = Params::default();
        assert!((p.bound_ms() - t - 100.0).abs() < 1e-9);
        // A higher threshold takes longer.
        assert!(phi_crossing_ms(200.0, 1000.0, 100.0, 12.0) > t);
    }

    #[test]
    fn cases_and_harness_flags() {
        for c in Case::ALL {
            assert_eq!(Case::from_name(c.name()), Some(c));
        }
        assert!(Case::Kill.fails() && !Case::StallShort.fails() && !Case::LargeMessages.fails());
        let args = Params::default().harness_args();
        assert_eq!(
            args[0..2],
            [
                "--cases",
                "kill,stall-short,stall-long,restart,large-messages"
            ]
        );
        assert!(args.windows(2).any(|w| w == ["--threshold", "10"]));
        assert!(args.windows(2).any(|w| w == ["--pause-ms", "1000"]));
    }

    fn row(case: &str, terminated: u64, detect: Option<f64>) -> FailoverRow {
        FailoverRow {
            case: case.into(),
            watched: 10,
            terminated,
            false_terminated: 0,
            watcher_alive: true,
            detect_ms: detect,
            reassociate_ms: None,
        }
    }

    #[test]
    fn verdicts_judge_the_targets() {
        let rows = vec![
            Row::measured("volley", row("kill", 10, Some(1500.0))),
            Row::measured("volley", row("stall-short", 1, None)),
            Row::measured("pekko", row("kill", 10, Some(1700.0))),
            Row::skipped("pekko", "java not found"),
        ];
        let notes = verdicts(&rows, &Params::default()).join("\n");
        assert!(notes.contains("volley kill: Terminated as expected: met, watcher up: met, detected within 1880 ms: met"), "{notes}");
        assert!(
            notes.contains("volley stall-short: Terminated as expected: MISSED"),
            "{notes}"
        );
        assert!(
            notes.contains("kill: volley 1500 ms vs pekko 1700 ms — faster than pekko: met"),
            "{notes}"
        );
    }
}
