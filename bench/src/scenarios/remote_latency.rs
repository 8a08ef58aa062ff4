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

use super::raw_tcp::{self, RoundTrips};
use super::remote_common::{histogram, load, ping_frame, AdderOnB, Calc, Layout, Nodes};
use super::{Ctx, Scenario};
use crate::measure::Workload;
use crate::progress::Progress;
use crate::report::remote_rows::{LatencyRow, PacerLateness, RemoteLatencyRow, Setup};
use crate::report::{measured, verdict, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "remote-latency",
    about: "remote ask latency p50/p99/p99.9: one in flight and at 10K/s, 100K/s offered",
    run: |ctx| Ok(Box::new(run(ctx)?)),
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

/// Open loop: `n` asks at `rate` asks/s. Returns (histogram from the
/// scheduled send time, the pacer's own lateness histogram).
pub fn open_loop(
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    rate: u64,
    n: u64,
) -> crate::Result<(Histogram<u64>, Histogram<u64>)> {
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
    Ok((h, late))
}

/// The row of a latency histogram `h`; `late` is the open-loop pacer's.
fn latency_row(
    mode: &str,
    rate: Option<u64>,
    h: &Histogram<u64>,
    setup: Option<Setup>,
    late: Option<&Histogram<u64>>,
) -> LatencyRow {
    LatencyRow {
        mode: mode.to_string(),
        offered_per_sec: rate,
        requests: h.len(),
        p50_ns: h.value_at_quantile(0.5),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        max_ns: h.max(),
        achieved_per_sec: rate.map_or(1e9 / h.mean(), |r| r as f64),
        setup,
        pacer: late.map(|late| PacerLateness {
            pacer_late_p50_ns: late.value_at_quantile(0.5),
            pacer_late_p99_ns: late.value_at_quantile(0.99),
            pacer_late_max_ns: late.max(),
        }),
    }
}

/// One ask in flight ([`closed_loop`]) to the adder on node B, ranked by
/// p50.
struct ClosedLoop<'a>(&'a AdderOnB<'a>);

impl Workload for ClosedLoop<'_> {
    type Run = Histogram<u64>;
    type Row = LatencyRow;

    fn run(&mut self, n: u64) -> crate::Result<Histogram<u64>> {
        closed_loop(self.0.nodes, &self.0.adder, n, n / 10)
    }

    fn row(&self, _n: u64, h: Histogram<u64>) -> LatencyRow {
        latency_row("1 in flight", None, &h, Some(self.0.setup.clone()), None)
    }

    fn figure(row: &LatencyRow) -> f64 {
        row.p50_ns as f64
    }
}

/// What an open loop drives: volley's asks, or raw TCP on blocking sockets
/// ([`raw_tcp::open_loop_blocking`]).
enum Target<'a> {
    Volley(&'a AdderOnB<'a>),
    RawTcp(&'a [u8]),
}

/// Requests at a fixed offered `rate`, ranked by p99.
struct OpenLoop<'a> {
    target: Target<'a>,
    rate: u64,
}

impl Workload for OpenLoop<'_> {
    type Run = (Histogram<u64>, Histogram<u64>);
    type Row = LatencyRow;

    fn run(&mut self, n: u64) -> crate::Result<Self::Run> {
        match &self.target {
            Target::Volley(to) => open_loop(to.nodes, &to.adder, self.rate, n),
            Target::RawTcp(frame) => raw_tcp::open_loop_blocking(frame, self.rate, n),
        }
    }

    fn row(&self, _n: u64, (h, late): Self::Run) -> LatencyRow {
        let setup = match &self.target {
            Target::Volley(to) => Some(to.setup.clone()),
            Target::RawTcp(_) => None,
        };
        latency_row("open loop", Some(self.rate), &h, setup, Some(&late))
    }

    fn figure(row: &LatencyRow) -> f64 {
        row.p99_ns as f64
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<RemoteLatencyRow>> {
    let layout = Layout::from_cli(&ctx.cli);
    let runs = ctx.cli.runs();
    let quick = ctx.cli.quick;
    let n = ctx
        .cli
        .requests
        .unwrap_or(if quick { 20_000 } else { 100_000 });
    let duration = Duration::from_secs_f64(if quick { 1.0 } else { 3.0 });
    let open_loop_requests = |rate: u64| (rate as f64 * duration.as_secs_f64()) as u64;
    let progress = Progress::new(2 + RATES.len() as u64);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(SCENARIO.name, crate::chart::remote_latency);
    progress.start(&format!("raw tcp: {n} round trips × {runs}"));
    let frame = ping_frame();
    let mut raw_rows = Vec::new();
    for wait in raw_tcp::RawWait::ALL {
        let mut round_trips = RoundTrips {
            frame: &frame,
            wait,
        };
        let mut row = round_trips.measure(n, runs)?;
        row.mode = Some("1 in flight".into());
        raw_rows.push(Row::measured(
            round_trips.system(),
            RemoteLatencyRow::RoundTrip(row),
        ));
    }
    progress.done();
    for &rate in RATES {
        progress.note(&format!(
            "raw tcp: open loop at {rate}/s for {duration:?} × {runs}"
        ));
        let mut open = OpenLoop {
            target: Target::RawTcp(&frame),
            rate,
        };
        let row = open.measure(open_loop_requests(rate), runs)?;
        raw_rows.push(Row::measured(
            "raw-tcp (blocking)",
            RemoteLatencyRow::Latency(row),
        ));
    }
    progress.start("volley: starting the nodes");
    let two_processes = ctx.cli.two_processes;
    let rows = Nodes::run(&ctx.rt, layout, true, two_processes, |nodes| {
        let adder = AdderOnB::spawn(ctx, nodes, layout)?;
        progress.done();
        let mut rows = Vec::new();
        progress.start(&format!("volley: {n} asks, one in flight × {runs}"));
        rows.push(ClosedLoop(&adder).measure(n, runs)?);
        progress.done();
        for &rate in RATES {
            progress.start(&format!(
                "volley: open loop at {rate}/s for {duration:?} × {runs}"
            ));
            let mut open = OpenLoop {
                target: Target::Volley(&adder),
                rate,
            };
            rows.push(open.measure(open_loop_requests(rate), runs)?);
            progress.done();
        }
        Ok(rows)
    })?;
    report.rows = rows
        .into_iter()
        .map(|r| Row::measured("volley", RemoteLatencyRow::Latency(r)))
        .chain(raw_rows)
        .collect();
    progress.finish();
    report.notes = summary(&report.rows);
    Ok(report)
}

/// volley against raw TCP, one in flight and at 10 K/s offered.
pub fn summary(rows: &[Row<RemoteLatencyRow>]) -> Vec<String> {
    let mut notes = Vec::new();
    // [p50, p99] in µs of `system`'s row at `rate`.
    let find = |system: &str, rate: Option<u64>| {
        measured(rows)
            .find(|(s, r)| *s == system && r.offered_per_sec() == rate)
            .map(|(_, r)| {
                let [p50, p99, _] = r.percentiles();
                [p50 as f64 / 1e3, p99 as f64 / 1e3]
            })
    };
    let (Some([raw50, raw99]), Some([v50, _])) = (find("raw-tcp", None), find("volley", None))
    else {
        return notes;
    };
    // One in flight is compared with the busy-polling raw row when there
    // is one: volley's dispatcher threads spin while idle, so a raw round
    // trip that parks on both sides is not the floor it should be held to.
    let (floor, floor50) = match find("raw-tcp (spinning)", None) {
        Some([p50, _]) => ("busy-polling raw TCP", p50),
        None => ("raw TCP", raw50),
    };
    notes.push(format!(
        "one in flight: volley p50 {v50:.1} µs vs {floor} p50 {floor50:.1} µs = {:.2}× (target ≤ 1.5×: {})",
        v50 / floor50,
        verdict(v50 <= 1.5 * floor50)
    ));
    if let Some([_, v99]) = find("volley", Some(10_000)) {
        // The target compares like with like: raw TCP driven by the same
        // kind of pacer at the same offered rate, when that row exists.
        let paced = find("raw-tcp (blocking)", Some(10_000)).map(|[_, p99]| p99);
        let (against, r99) = match paced {
            Some(p99) => ("raw TCP at 10 K/s", p99),
            None => ("raw TCP", raw99),
        };
        let mut note = format!(
            "10 K/s offered: volley p99 {v99:.1} µs vs {against} p99 {r99:.1} µs = {:.2}× (target ≤ 2×: {})",
            v99 / r99,
            verdict(v99 <= 2.0 * r99),
        );
        if paced.is_some() {
            note.push_str(&format!(
                "; vs raw TCP one in flight p99 {raw99:.1} µs = {:.2}×",
                v99 / raw99
            ));
        }
        notes.push(note);
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::remote_rows::RoundTripRow;

    fn volley(offered: Option<u64>, p50_us: u64, p99_us: u64) -> Row<RemoteLatencyRow> {
        Row::measured(
            "volley",
            RemoteLatencyRow::Latency(at(offered, p50_us, p99_us)),
        )
    }

    fn at(offered: Option<u64>, p50_us: u64, p99_us: u64) -> LatencyRow {
        LatencyRow {
            mode: "m".into(),
            offered_per_sec: offered,
            requests: 1,
            p50_ns: p50_us * 1000,
            p99_ns: p99_us * 1000,
            p999_ns: 0,
            max_ns: 0,
            achieved_per_sec: 1.0,
            setup: None,
            pacer: None,
        }
    }

    fn raw_round_trip(p50_us: u64, p99_us: u64) -> Row<RemoteLatencyRow> {
        raw_round_trip_of("raw-tcp", p50_us, p99_us)
    }

    fn raw_round_trip_of(system: &str, p50_us: u64, p99_us: u64) -> Row<RemoteLatencyRow> {
        let row = RoundTripRow {
            test: "t".into(),
            frame_bytes: 1,
            count: 1,
            requests: 1,
            p50_ns: p50_us * 1000,
            p99_ns: p99_us * 1000,
            p999_ns: 0,
            mean_ns: 0.0,
            mode: None,
        };
        Row::measured(system, RemoteLatencyRow::RoundTrip(row))
    }

    #[test]
    fn one_in_flight_is_held_to_the_busy_polling_row_when_measured() {
        let rows = vec![
            volley(None, 30, 60),
            raw_round_trip(60, 90),
            raw_round_trip_of("raw-tcp (spinning)", 15, 30),
        ];
        let notes = summary(&rows).join("\n");
        assert!(
            notes.contains("vs busy-polling raw TCP p50 15.0 µs = 2.00× (target ≤ 1.5×: MISSED)"),
            "{notes}"
        );
    }

    #[test]
    fn summary_compares_with_raw_tcp() {
        let rows = vec![
            volley(None, 30, 60),
            volley(Some(10_000), 30, 90),
            raw_round_trip(20, 40),
        ];
        let notes = summary(&rows).join("\n");
        assert!(notes.contains("= 1.50× (target ≤ 1.5×: met)"), "{notes}");
        assert!(
            notes.contains(
                "volley p99 90.0 µs vs raw TCP p99 40.0 µs = 2.25× (target ≤ 2×: MISSED)"
            ),
            "{notes}"
        );
        assert!(!notes.contains("one in flight p99"), "{notes}");
    }

    #[test]
    fn the_10k_verdict_uses_raw_tcp_at_the_same_rate_when_measured() {
        let rows = vec![
            volley(None, 30, 60),
            volley(Some(10_000), 30, 90),
            raw_round_trip(20, 40),
            Row::measured(
                "raw-tcp (blocking)",
                RemoteLatencyRow::Latency(at(Some(10_000), 25, 60)),
            ),
        ];
        let notes = summary(&rows).join("\n");
        assert!(
            notes.contains("raw TCP at 10 K/s p99 60.0 µs = 1.50× (target ≤ 2×: met)"),
            "{notes}"
        );
        assert!(
            notes.contains("; vs raw TCP one in flight p99 40.0 µs = 2.25×"),
            "{notes}"
        );
    }
}
