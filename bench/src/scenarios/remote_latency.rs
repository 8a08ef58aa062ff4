//! `remote-latency`: remote ask round trips to an adder on node B, with
//! p50/p99/p99.9 from an HDR histogram. (1) One request in flight (closed
//! loop, the asking task runs on node A's I/O runtime). (2) Open loop at
//! fixed offered rates (10 K/s and 100 K/s): a pacer thread starts each ask
//! at its scheduled time, and latency is measured from the *scheduled* time,
//! so a stall is charged to every request it delays (no coordinated
//! omission). (3) The raw-TCP round trip of a frame of the same size, in
//! the same run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use super::remote_common::{histogram, load, ping_frame, Calc, Layout, Nodes};
use super::{raw_tcp, Ctx, Scenario};
use crate::progress::Progress;
use crate::report::{col, num, row, Fmt, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "remote-latency",
    about: "remote ask latency p50/p99/p99.9: one in flight and at 10K/s, 100K/s offered",
    run,
    chart: crate::chart_remote::latency,
};

pub const RATES: &[u64] = &[10_000, 100_000];

/// Closed loop: `warmup` then `n` asks one after another, on A's runtime.
pub fn closed_loop(
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    n: u64,
    warmup: u64,
) -> crate::Result<Histogram<u64>> {
    let adder = adder.clone();
    let task = nodes.a.system.runtime_handle().spawn(async move {
        let mut h = histogram();
        for i in 0..n + warmup {
            let a = i as i64;
            let t = Instant::now();
            let r = adder
                .ask(
                    |reply_to| Calc::Sum { a, b: 1, reply_to },
                    Duration::from_secs(10),
                )
                .await;
            let d = t.elapsed();
            match r {
                Ok(s) if s == a + 1 => {}
                other => return Err(format!("ask {i}: {other:?}")),
            }
            if i >= warmup {
                h.record(d.as_nanos().max(1) as u64)
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(h)
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(rt.block_on(task)??)
}

/// Nanosleep precision: without this the kernel's default 50 µs timer
/// slack makes every pacer sleep that late.
pub(crate) fn tight_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer argument and only
    // affects the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The pacer's wait: sleeps until `scheduled` and records how late it woke.
pub(crate) fn sleep_until(scheduled: Instant, late: &mut Histogram<u64>) {
    let now = Instant::now();
    if scheduled > now {
        std::thread::sleep(scheduled - now);
    }
    let l = Instant::now().saturating_duration_since(scheduled);
    let _ = late.record(l.as_nanos().max(1) as u64);
}

/// Open loop at `rate` asks/s for `duration`. Returns (histogram from the
/// scheduled send time, requests, the pacer's own lateness histogram).
pub fn open_loop(
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    rate: u64,
    duration: Duration,
) -> crate::Result<(Histogram<u64>, u64, Histogram<u64>)> {
    let n = (rate as f64 * duration.as_secs_f64()) as u64;
    let period = Duration::from_nanos(1_000_000_000 / rate);
    let hist = Arc::new(Mutex::new(histogram()));
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let handle = nodes.a.system.runtime_handle();
    let pacer = std::thread::spawn({
        let (adder, hist, done, failed) =
            (adder.clone(), hist.clone(), done.clone(), failed.clone());
        move || {
            tight_timer_slack();
            let start = Instant::now() + Duration::from_millis(2);
            let mut late = histogram();
            for i in 0..n {
                let scheduled = start + period * i as u32;
                sleep_until(scheduled, &mut late);
                let (adder, hist, done, failed) =
                    (adder.clone(), hist.clone(), done.clone(), failed.clone());
                handle.spawn(async move {
                    let a = i as i64;
                    let r = adder
                        .ask(
                            |reply_to| Calc::Sum { a, b: 1, reply_to },
                            Duration::from_secs(10),
                        )
                        .await;
                    let d = scheduled.elapsed();
                    if r == Ok(a + 1) {
                        let _ = hist
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .record(d.as_nanos().max(1) as u64);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    done.fetch_add(1, Ordering::Release);
                });
            }
            late
        }
    });
    let late = pacer.join().map_err(|_| "the pacer panicked")?;
    crate::measure::wait_until("the open-loop replies", Duration::from_secs(30), || {
        done.load(Ordering::Acquire) == n
    })?;
    let failed = failed.load(Ordering::Relaxed);
    let h = hist.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if failed != 0 || h.len() != n {
        return Err(format!(
            "remote-latency at {rate}/s: {n} asks, {failed} failed, {} recorded",
            h.len()
        )
        .into());
    }
    Ok((h, n, late))
}

fn lat_row(system: &str, mode: &str, rate: Option<u64>, h: &Histogram<u64>, extra: Value) -> Row {
    let mut r = row(
        system,
        json!({
            "mode": mode,
            "offered_per_sec": rate,
            "requests": h.len(),
            "p50_ns": h.value_at_quantile(0.5),
            "p99_ns": h.value_at_quantile(0.99),
            "p999_ns": h.value_at_quantile(0.999),
            "max_ns": h.max(),
            "achieved_per_sec": rate.map_or(1e9 / h.mean(), |r| r as f64),
        }),
    );
    if let Value::Object(m) = extra {
        r.extend(m);
    }
    r
}

fn run(ctx: &Ctx) -> crate::Result<Report> {
    let layout = Layout::from_cli(&ctx.cli);
    let runs = ctx.cli.runs();
    let quick = ctx.cli.quick;
    let n = ctx
        .cli
        .requests
        .unwrap_or(if quick { 20_000 } else { 100_000 });
    let duration = Duration::from_secs_f64(if quick { 1.0 } else { 3.0 });
    let progress = Progress::new(2 + RATES.len() as u64);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(
        SCENARIO.name,
        vec![
            col("mode", "mode", Fmt::Plain),
            col("offered_per_sec", "offered/s", Fmt::Plain),
            col("requests", "requests", Fmt::Plain),
            col("p50_ns", "p50 µs", Fmt::Micros),
            col("p99_ns", "p99 µs", Fmt::Micros),
            col("p999_ns", "p99.9 µs", Fmt::Micros),
        ],
    );
    progress.start(&format!("raw tcp: {n} round trips × {runs}"));
    let frame = ping_frame();
    let mut raw = raw_tcp::pingpong_row(&frame, n, runs, false)?;
    raw.insert("mode".into(), "1 in flight".into());
    let mut raw_blocking = raw_tcp::pingpong_row(&frame, n, runs, true)?;
    raw_blocking.insert("mode".into(), "1 in flight".into());
    progress.done();
    let mut raw_open = Vec::new();
    for &rate in RATES {
        progress.note(&format!(
            "raw tcp: open loop at {rate}/s for {duration:?} × {runs}"
        ));
        let mut open = Vec::new();
        for _ in 0..runs {
            let (h, late) = raw_tcp::open_loop_blocking(&frame, rate, duration)?;
            let e = json!({
                "pacer_late_p50_ns": late.value_at_quantile(0.5),
                "pacer_late_p99_ns": late.value_at_quantile(0.99),
                "pacer_late_max_ns": late.max(),
            });
            open.push(lat_row(
                "raw-tcp (blocking)",
                "open loop",
                Some(rate),
                &h,
                e,
            ));
        }
        raw_open.push(crate::measure::median_row(&open, "p99_ns").expect("runs ≥ 1"));
    }
    progress.start("volley: starting the nodes");
    let nodes = Nodes::start(&ctx.rt, layout, true, ctx.cli.two_processes)?;
    let extra = json!({
        "processes": if ctx.cli.two_processes { 2 } else { 1 },
        "threads": layout.describe(),
    });
    let result = (|| -> crate::Result<Vec<Row>> {
        let adder = nodes.spawn_on_b::<Calc>(&ctx.rt, "adder")?;
        progress.done();
        let mut rows = Vec::new();
        progress.start(&format!("volley: {n} asks, one in flight × {runs}"));
        let mut closed = Vec::new();
        for _ in 0..runs {
            let h = closed_loop(&nodes, &adder, n, n / 10)?;
            closed.push(lat_row("volley", "1 in flight", None, &h, extra.clone()));
        }
        rows.push(crate::measure::median_row(&closed, "p50_ns").expect("runs ≥ 1"));
        progress.done();
        for &rate in RATES {
            progress.start(&format!(
                "volley: open loop at {rate}/s for {duration:?} × {runs}"
            ));
            let mut open = Vec::new();
            for _ in 0..runs {
                let (h, _, late) = open_loop(&nodes, &adder, rate, duration)?;
                let mut e = extra.clone();
                e["pacer_late_p50_ns"] = json!(late.value_at_quantile(0.5));
                e["pacer_late_p99_ns"] = json!(late.value_at_quantile(0.99));
                e["pacer_late_max_ns"] = json!(late.max());
                open.push(lat_row("volley", "open loop", Some(rate), &h, e));
            }
            rows.push(crate::measure::median_row(&open, "p99_ns").expect("runs ≥ 1"));
            progress.done();
        }
        Ok(rows)
    })();
    nodes.stop(&ctx.rt);
    report.rows = result?;
    report.rows.push(raw);
    report.rows.push(raw_blocking);
    report.rows.extend(raw_open);
    progress.finish();
    report.notes = summary(&report.rows);
    Ok(report)
}

pub fn summary(rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    let find = |system: &str, rate: Option<f64>| {
        rows.iter().find(|r| {
            r.get("system").and_then(Value::as_str) == Some(system)
                && num(r, "offered_per_sec") == rate
        })
    };
    let (Some(raw), Some(one)) = (find("raw-tcp", None), find("volley", None)) else {
        return notes;
    };
    let raw50 = num(raw, "p50_ns").unwrap_or(f64::NAN);
    let raw99 = num(raw, "p99_ns").unwrap_or(f64::NAN);
    let v50 = num(one, "p50_ns").unwrap_or(f64::NAN);
    notes.push(format!(
        "one in flight: volley p50 {:.1} µs vs raw TCP p50 {:.1} µs = {:.2}× (target ≤ 1.5×: {})",
        v50 / 1e3,
        raw50 / 1e3,
        v50 / raw50,
        if v50 <= 1.5 * raw50 { "met" } else { "MISSED" }
    ));
    if let Some(r10) = find("volley", Some(10_000.0)) {
        let v99 = num(r10, "p99_ns").unwrap_or(f64::NAN);
        // The target compares like with like: raw TCP driven by the same
        // kind of pacer at the same offered rate, when that row exists.
        match find("raw-tcp (blocking)", Some(10_000.0)) {
            Some(raw_open) => {
                let r99 = num(raw_open, "p99_ns").unwrap_or(f64::NAN);
                notes.push(format!(
                    "10 K/s offered: volley p99 {:.1} µs vs raw TCP at 10 K/s p99 {:.1} µs = {:.2}× (target ≤ 2×: {}); vs raw TCP one in flight p99 {:.1} µs = {:.2}×",
                    v99 / 1e3,
                    r99 / 1e3,
                    v99 / r99,
                    if v99 <= 2.0 * r99 { "met" } else { "MISSED" },
                    raw99 / 1e3,
                    v99 / raw99,
                ));
            }
            None => notes.push(format!(
                "10 K/s offered: volley p99 {:.1} µs vs raw TCP p99 {:.1} µs = {:.2}× (target ≤ 2×: {})",
                v99 / 1e3,
                raw99 / 1e3,
                v99 / raw99,
                if v99 <= 2.0 * raw99 { "met" } else { "MISSED" }
            )),
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_compares_with_raw_tcp() {
        let rows = vec![
            row(
                "volley",
                json!({"offered_per_sec": null, "p50_ns": 30000, "p99_ns": 60000}),
            ),
            row(
                "volley",
                json!({"offered_per_sec": 10000, "p50_ns": 30000, "p99_ns": 90000}),
            ),
            row("raw-tcp", json!({"p50_ns": 20000, "p99_ns": 40000})),
        ];
        let notes = summary(&rows).join("\n");
        assert!(notes.contains("= 1.50× (target ≤ 1.5×: met)"), "{notes}");
        assert!(notes.contains("= 2.25× (target ≤ 2×: MISSED)"), "{notes}");
    }

    #[test]
    fn the_10k_verdict_uses_raw_tcp_at_the_same_rate_when_measured() {
        let rows = vec![
            row(
                "volley",
                json!({"offered_per_sec": null, "p50_ns": 30000, "p99_ns": 60000}),
            ),
            row(
                "volley",
                json!({"offered_per_sec": 10000, "p50_ns": 30000, "p99_ns": 90000}),
            ),
            row("raw-tcp", json!({"p50_ns": 20000, "p99_ns": 40000})),
            row(
                "raw-tcp (blocking)",
                json!({"offered_per_sec": 10000, "p50_ns": 25000, "p99_ns": 60000}),
            ),
        ];
        let notes = summary(&rows).join("\n");
        assert!(
            notes.contains("raw TCP at 10 K/s p99 60.0 µs = 1.50× (target ≤ 2×: met)"),
            "{notes}"
        );
        assert!(
            notes.contains("one in flight p99 40.0 µs = 2.25×"),
            "{notes}"
        );
    }
}
