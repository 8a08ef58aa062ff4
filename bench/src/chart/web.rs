//! `web`: per transport, asks per second and p99, one bar per (system,
//! clients); the push row's figures in the title.

use std::path::Path;

use super::draw::{bars, BarPanel};
use crate::report::web_rows::WebRow;
use crate::report::{measured, Report};

pub fn web(report: &Report<WebRow>, path: &Path) -> crate::Result<()> {
    let of = |transport: &str, value: fn(&WebRow) -> Option<f64>| -> Vec<(String, f64)> {
        measured(&report.rows)
            .filter(|(_, r)| r.transport == transport)
            .filter_map(|(system, r)| Some((format!("{system} ×{}", r.clients), value(r)?)))
            .collect()
    };
    let push = measured(&report.rows)
        .find(|(_, r)| r.transport == "websocket-push")
        .map(|(_, r)| {
            format!(
                "; push to {} clients: {:.0} k msgs/s, {:.1} KiB/session",
                r.clients,
                r.rps.unwrap_or(0.0) / 1e3,
                r.bytes_per_session.unwrap_or(0.0) / 1024.0
            )
        })
        .unwrap_or_default();
    let mut panels = Vec::new();
    for (transport, name) in [("websocket", "WebSocket"), ("long-poll", "long-poll")] {
        panels.push(BarPanel {
            title: format!("{name} asks (higher is better)"),
            y_label: "k req/s".into(),
            bars: of(transport, |r| Some(r.rps? / 1e3)),
        });
        panels.push(BarPanel {
            title: format!("{name} p99 (lower is better)"),
            y_label: "ms".into(),
            bars: of(transport, |r| Some(r.p99_ns? as f64 / 1e6)),
        });
    }
    bars(
        path,
        &report.heading(&format!("web gateway vs bare axum echo (× clients){push}")),
        &panels,
    )
}
