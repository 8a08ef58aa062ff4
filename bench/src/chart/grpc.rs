//! `grpc`: requests per second, p50 and p99, one bar per server.

use std::path::Path;

use super::draw::{bars, BarPanel};
use crate::report::grpc_rows::GrpcRow;
use crate::report::{measured, Report};

pub fn grpc(report: &Report<GrpcRow>, path: &Path) -> crate::Result<()> {
    let of = |value: fn(&GrpcRow) -> f64| -> Vec<(String, f64)> {
        measured(&report.rows)
            .map(|(system, r)| {
                let label = match &r.mode {
                    Some(mode) => format!("{system} ({mode})"),
                    None => system.to_string(),
                };
                (label, value(r))
            })
            .collect()
    };
    bars(
        path,
        &report.heading("gRPC Greeter under ghz (1000 calls in flight, 50 connections)"),
        &[
            BarPanel {
                title: "throughput (higher is better)".into(),
                y_label: "k req/s".into(),
                bars: of(|r| r.rps / 1e3),
            },
            BarPanel {
                title: "p50 (lower is better)".into(),
                y_label: "ms".into(),
                bars: of(|r| r.p50_ns as f64 / 1e6),
            },
            BarPanel {
                title: "p99 (lower is better)".into(),
                y_label: "ms".into(),
                bars: of(|r| r.p99_ns as f64 / 1e6),
            },
        ],
    )
}
