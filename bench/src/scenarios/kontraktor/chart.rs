//! The chart: one panel per test, this run's rows next to the seed's own
//! figures (labelled as such: another machine, 20 cores).

use std::path::Path;

use super::row::{KontraktorRow, Test};
use super::SEED;
use crate::chart::{bars, BarPanel};
use crate::report::{measured, Report};

/// The bars of one test: (label, M msgs/s).
pub fn test_bars(report: &Report<KontraktorRow>, test: Test) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = measured(&report.rows)
        .filter(|(_, r)| r.test == test)
        .map(|(system, r)| (format!("{system} {}", r.sender), r.msgs_per_s / 1e6))
        .collect();
    for (system, tell, ask) in SEED {
        let rate = if test == Test::Tell { tell } else { ask };
        out.push((format!("{system} (seed, 20 cores)"), rate / 1e6));
    }
    out
}

pub fn chart(report: &Report<KontraktorRow>, path: &Path) -> crate::Result<()> {
    let panel = |test: Test, title: &str| BarPanel {
        title: title.into(),
        y_label: "M msgs/s".into(),
        bars: test_bars(report, test),
    };
    bars(
        path,
        &report.heading("tell sum / ask sum, two processes"),
        &[panel(Test::Tell, "tell sum"), panel(Test::Ask, "ask sum")],
    )
}
