//! `remote-tell`: kontraktor's remote tell test. A sender on node A sends
//! `Add { a, b }` (two numbers) to an adder remote-spawned on node B, with
//! `send().await` so that backpressure (a full outbound queue) waits instead
//! of dropping. The adder counts and sums; its report (asked after the last
//! message, on the same lane, so after it) must match exactly.

use std::time::{Duration, Instant};

use serde_json::json;

use super::remote_common::{load, note_best_rate, report as adder_report, Calc, Layout, Nodes};
use super::{Ctx, Scenario};
use crate::progress::Progress;
use crate::report::{col, row, Fmt, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "remote-tell",
    about: "fire-and-forget two-number messages to a remote adder, msgs/s",
    run,
    chart: crate::chart_remote::throughput_bars,
};

/// Send `n` messages from `senders` tasks on the driver thread; returns
/// (messages counted at the receiver, elapsed until its report arrived).
pub fn tell_once(
    ctx: &Ctx,
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    n: u64,
    senders: u64,
) -> crate::Result<(u64, Duration)> {
    let dead_before = nodes.dead_letters();
    let per = n / senders;
    let n = per * senders;
    let start = Instant::now();
    let failed = ctx.rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for s in 0..senders {
            let adder = adder.clone();
            set.spawn(async move {
                let mut failed = 0u64;
                for i in 0..per {
                    let a = (s * per + i) as i64;
                    if adder.send(Calc::Add { a, b: 1 }).await.is_err() {
                        failed += 1;
                    }
                }
                failed
            });
        }
        let mut failed = 0;
        while let Some(f) = set.join_next().await {
            failed += f.unwrap_or(per);
        }
        failed
    });
    let (count, sum) = adder_report(&ctx.rt, adder)?;
    let elapsed = start.elapsed();
    let expected_sum = (0..n as i64).map(|a| a + 1).fold(0i64, i64::wrapping_add);
    let dead = nodes.dead_letters() - dead_before;
    if failed != 0 || count != n || sum != expected_sum || dead != 0 {
        return Err(format!(
            "remote-tell count mismatch: sent {n} ({failed} refused), the adder counted {count} \
             (sum {sum}, expected {expected_sum}), {dead} dead letters"
        )
        .into());
    }
    Ok((count, elapsed))
}

fn run(ctx: &Ctx) -> crate::Result<Report> {
    let layout = Layout::from_cli(&ctx.cli);
    let runs = ctx.cli.runs();
    let quick = ctx.cli.quick;
    let progress = Progress::new(2);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(
        SCENARIO.name,
        vec![
            col("senders", "senders", Fmt::Plain),
            col("messages", "messages", Fmt::Plain),
            col("elapsed_ns", "ms", Fmt::Millis),
            col("msgs_per_sec", "M msgs/s", Fmt::Millions),
        ],
    );
    progress.start("volley: starting the nodes, warming up");
    let nodes = Nodes::start(&ctx.rt, layout, true, ctx.cli.two_processes)?;
    let result = (|| -> crate::Result<Vec<Row>> {
        let adder = nodes.spawn_on_b::<Calc>(&ctx.rt, "adder")?;
        let warm = if quick { 300_000 } else { 1_000_000 };
        let (m, elapsed) = tell_once(ctx, &nodes, &adder, warm, 1)?;
        let n = ctx.cli.messages.unwrap_or_else(|| {
            let rate = m as f64 / elapsed.as_secs_f64();
            (rate * if quick { 0.7 } else { 2.0 }).clamp(100_000.0, 200_000_000.0) as u64
        });
        progress.done();
        let mut rows = Vec::new();
        for senders in [1u64, 8] {
            progress.start(&format!(
                "volley: {n} tells from {senders} sender task(s) × {runs}"
            ));
            let mut results = Vec::new();
            for _ in 0..runs {
                let (count, elapsed) = tell_once(ctx, &nodes, &adder, n, senders)?;
                results.push(row(
                    "volley",
                    json!({
                        "senders": senders,
                        "messages": count,
                        "elapsed_ns": elapsed.as_nanos() as u64,
                        "msgs_per_sec": count as f64 / elapsed.as_secs_f64(),
                        "processes": if ctx.cli.two_processes { 2 } else { 1 },
                        "threads": layout.describe(),
                    }),
                ));
            }
            rows.push(crate::measure::median_row(&results, "msgs_per_sec").expect("runs ≥ 1"));
        }
        progress.done();
        Ok(rows)
    })();
    nodes.stop(&ctx.rt);
    report.rows = result?;
    progress.finish();
    note_best_rate(&mut report, "remote tell", 20e6, "kontraktor seed: 1.9 M");
    Ok(report)
}
