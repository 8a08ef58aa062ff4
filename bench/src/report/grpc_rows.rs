//! The rows of `grpc`: one per server under ghz's load.

use serde::Serialize;

use super::{col, Column, Fmt, Metrics};

/// `grpc`: one server, measured by ghz.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrpcRow {
    /// volley's dispatcher (`default`, `app-runtime`); absent for peers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Calls answered OK in the measured run.
    pub requests: u64,
    pub rps: f64,
    pub avg_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// Calls that did not end OK, less those ghz cut itself when its
    /// duration ran out ("use of closed network connection" on its own
    /// side).
    pub errors: u64,
    /// CPU time the server process used per answered call, in µs: what
    /// the server costs, even where ghz's one core limits req/s.
    pub server_cpu_us_per_call: f64,
    /// The CPUs the server and ghz were pinned to (`taskset`), or
    /// `unpinned`.
    pub cpus: String,
}

impl Metrics for GrpcRow {
    fn columns() -> Vec<Column> {
        vec![
            col("mode", "volley mode", Fmt::Plain),
            col("requests", "calls", Fmt::Plain),
            col("rps", "req/s", Fmt::Round),
            col("avg_ns", "avg ms", Fmt::Millis),
            col("p50_ns", "p50 ms", Fmt::Millis),
            col("p99_ns", "p99 ms", Fmt::Millis),
            col("errors", "errors", Fmt::Plain),
            col("server_cpu_us_per_call", "server CPU µs/call", Fmt::Plain),
            col("cpus", "cpus", Fmt::Plain),
        ]
    }
}
