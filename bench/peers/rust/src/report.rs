//! Machine-readable output: one JSON object per line on stdout, nothing else.

use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

pub fn emit(line: Value) {
    let mut out = std::io::stdout().lock();
    // A closed stdout means the driver is gone; nothing useful left to do.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

pub fn pingpong(
    system: &str,
    pairs: u64,
    inflight: u64,
    messages: u64,
    elapsed: Duration,
) -> Value {
    let ns = elapsed.as_nanos().max(1) as u64;
    json!({
        "scenario": "local-pingpong",
        "system": system,
        "pairs": pairs,
        "inflight": inflight,
        // Rust frameworks have no dispatcher-throughput knob.
        "throughput": null,
        "messages": messages,
        "elapsed_ns": ns,
        "msgs_per_sec": messages as f64 * 1e9 / ns as f64,
    })
}

/// One `remote-pingpong` client count: `total` = clients × repeat × 2.
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub fn remote_pingpong(system: &str, clients: u64, total: u64, elapsed: Duration) -> Value {
    let ns = elapsed.as_nanos().max(1) as u64;
    json!({
        "scenario": "remote-pingpong",
        "system": system,
        "clients": clients,
        "total": total,
        "elapsed_ns": ns,
        "msgs_per_sec": total as f64 * 1e9 / ns as f64,
    })
}

pub fn spawn(system: &str, actors: u64, spawn: Duration, stop: Duration, rss_growth: i64) -> Value {
    let n = actors as f64;
    json!({
        "scenario": "spawn",
        "system": system,
        "actors": actors,
        "spawn_ns_per_actor": spawn.as_nanos() as f64 / n,
        "stop_ns_per_actor": stop.as_nanos() as f64 / n,
        "bytes_per_actor": rss_growth as f64 / n,
    })
}

pub fn ask(system: &str, requests: u64, hist: &Histogram<u64>) -> Value {
    json!({
        "scenario": "ask-local",
        "system": system,
        "requests": requests,
        "p50_ns": hist.value_at_quantile(0.50),
        "p99_ns": hist.value_at_quantile(0.99),
        "mean_ns": hist.mean(),
    })
}

/// Resident set size of this process in bytes (VmRSS from /proc/self/status).
pub fn rss_bytes() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A histogram covering 1 ns .. 60 s at 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// Records one round trip, clamping into the histogram's range.
pub fn record(hist: &mut Histogram<u64>, rtt: Duration) {
    let ns = (rtt.as_nanos() as u64).clamp(1, hist.high());
    hist.record(ns).expect("value clamped into range");
}
