//! Charts of the in-process scenarios: local-pingpong's sweeps as lines,
//! spawn's and ask-local's figures as bars.

use std::path::Path;

use super::{bars, lines, BarPanel, Line, LinePanel};
use crate::report::rows::{AskLocalRow, LocalPingPongRow, SpawnRow};
use crate::report::{measured, Report};
use crate::scenarios::local_pingpong::{best_throughput, SWEEP_PAIRS};

/// Two panels: msgs/s against throughput (P=4, K) and against pairs (K, at
/// each system's best throughput), one line per system.
pub fn local_pingpong(report: &Report<LocalPingPongRow>, path: &Path) -> crate::Result<()> {
    let rows: Vec<(&str, &LocalPingPongRow)> = measured(&report.rows).collect();
    let k = rows
        .iter()
        .map(|(_, r)| r.inflight)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut systems: Vec<&str> = Vec::new();
    for (s, _) in &rows {
        if !systems.contains(s) {
            systems.push(s);
        }
    }
    let mut throughputs: Vec<u64> = rows.iter().filter_map(|(_, r)| r.throughput).collect();
    throughputs.sort_unstable();
    throughputs.dedup();
    let mut by_throughput = Vec::new();
    let mut by_pairs = Vec::new();
    for s in systems {
        let mine: Vec<LocalPingPongRow> = rows
            .iter()
            .filter(|(system, r)| *system == s && r.inflight == k)
            .map(|(_, r)| (*r).clone())
            .collect();
        let at_sweep = |r: &&LocalPingPongRow| r.pairs == SWEEP_PAIRS;
        let mut t_points: Vec<(f64, f64)> = mine
            .iter()
            .filter(at_sweep)
            .filter_map(|r| Some((r.throughput? as f64, r.msgs_per_sec / 1e6)))
            .collect();
        if t_points.is_empty() {
            // No throughput knob: the same value at every throughput.
            if let Some(r) = mine.iter().find(at_sweep) {
                t_points = throughputs
                    .iter()
                    .map(|&t| (t as f64, r.msgs_per_sec / 1e6))
                    .collect();
            }
        }
        t_points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let best_t = best_throughput(&mine, k);
        let mut p_points: Vec<(f64, f64)> = mine
            .iter()
            .filter(|r| r.throughput == best_t)
            .map(|r| (r.pairs as f64, r.msgs_per_sec / 1e6))
            .collect();
        p_points.sort_by(|a, b| a.0.total_cmp(&b.0));
        by_throughput.push(Line::of_system(s, t_points));
        by_pairs.push(Line::of_system(s, p_points));
    }
    lines(
        path,
        &report.heading("local-pingpong"),
        &[
            LinePanel {
                title: format!("P={SWEEP_PAIRS}, K={k}: msgs/s vs dispatcher throughput"),
                x_label: "throughput (messages per activation)".into(),
                y_label: "M msgs/s".into(),
                lines: by_throughput,
            },
            LinePanel {
                title: format!("K={k}, best throughput: msgs/s vs pairs"),
                x_label: "pairs".into(),
                y_label: "M msgs/s".into(),
                lines: by_pairs,
            },
        ],
    )
}

/// `system`, or `system (mode)` for volley's variants.
fn label(system: &str, mode: Option<&str>) -> String {
    match mode {
        Some(mode) => format!("{system} ({mode})"),
        None => system.to_string(),
    }
}

/// One bar per measured row of `report`: (label, `value` of the row).
fn bars_of<M>(
    report: &Report<M>,
    label_of: impl Fn(&str, &M) -> String,
    value: impl Fn(&M) -> f64,
) -> Vec<(String, f64)> {
    measured(&report.rows)
        .map(|(system, m)| (label_of(system, m), value(m)))
        .collect()
}

/// Spawn, stop and memory per actor, one bar per system (and volley mode).
pub fn spawn(report: &Report<SpawnRow>, path: &Path) -> crate::Result<()> {
    let per_actor =
        |value: fn(&SpawnRow) -> f64| bars_of(report, |s, r| label(s, r.mode.as_deref()), value);
    bars(
        path,
        &report.heading("spawn and stop idle actors"),
        &[
            BarPanel {
                title: "spawn (lower is better)".into(),
                y_label: "µs per actor".into(),
                bars: per_actor(|r| r.spawn_ns_per_actor / 1e3),
            },
            BarPanel {
                title: "stop (lower is better)".into(),
                y_label: "µs per actor".into(),
                bars: per_actor(|r| r.stop_ns_per_actor / 1e3),
            },
            BarPanel {
                title: "memory (VmRSS growth)".into(),
                y_label: "bytes per actor".into(),
                bars: per_actor(|r| r.bytes_per_actor),
            },
        ],
    )
}

/// Ask round-trip p50 and p99, one bar per system (and volley mode).
pub fn ask_local(report: &Report<AskLocalRow>, path: &Path) -> crate::Result<()> {
    let micros = |value: fn(&AskLocalRow) -> u64| {
        bars_of(
            report,
            |s, r| label(s, r.mode.as_deref()),
            |r| value(r) as f64 / 1e3,
        )
    };
    bars(
        path,
        &report.heading("ask round trip, one in flight"),
        &[
            BarPanel {
                title: "p50 (lower is better)".into(),
                y_label: "µs".into(),
                bars: micros(|r| r.p50_ns),
            },
            BarPanel {
                title: "p99 (lower is better)".into(),
                y_label: "µs".into(),
                bars: micros(|r| r.p99_ns),
            },
        ],
    )
}
