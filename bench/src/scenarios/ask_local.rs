//! `ask-local`: in-process ask round trips, one in flight; p50/p99.

use std::path::Path;
use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::json;
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo};

use super::{Ctx, Scenario};
use crate::chart::{self, BarPanel};
use crate::measure::median_row;
use crate::progress::Progress;
use crate::report::{col, num, row, skipped, Fmt, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "ask-local",
    about: "in-process ask round-trip latency, p50 and p99",
    run,
    chart: draw,
};

fn run(ctx: &Ctx) -> crate::Result<Report> {
    let n = ctx
        .cli
        .requests
        .unwrap_or(if ctx.cli.quick { 20_000 } else { 100_000 })
        .max(10);
    let runs = ctx.cli.runs();
    let progress = Progress::new(2);
    let peers = ctx.peers(&progress);
    progress.add_steps((peers.iter().filter(|p| p.1.is_ok()).count() * runs) as u64);
    let mut report = Report::new(
        SCENARIO.name,
        vec![
            col("mode", "volley mode", Fmt::Plain),
            col("requests", "requests", Fmt::Plain),
            col("p50_ns", "p50 µs", Fmt::Micros),
            col("p99_ns", "p99 µs", Fmt::Micros),
            col("mean_ns", "mean µs", Fmt::Micros),
        ],
    );
    for actor_reply in [false, true] {
        progress.start(&format!(
            "volley: {n} {} × {runs}",
            if actor_reply {
                "actor-to-actor requests"
            } else {
                "asks"
            }
        ));
        report.rows.push(volley(ctx, n, runs, actor_reply)?);
        progress.done();
    }
    let args = vec!["--requests".to_string(), n.to_string()];
    for (peer, status) in peers {
        match status {
            Err(why) => report.rows.push(skipped(peer.name(), &why)),
            Ok(()) => {
                report
                    .rows
                    .extend(ctx.run_peer(&progress, peer, SCENARIO.name, &args, "p50_ns"))
            }
        }
    }
    progress.finish();
    Ok(report)
}

struct Responder;

impl Actor for Responder {
    type Msg = (u64, ReplyTo<u64>);
    fn handle(&mut self, _ctx: &mut Context<Self>, (n, reply): Self::Msg) -> HandleResult {
        reply.tell(n + 1);
        Ok(())
    }
}

/// The other side of the actor-to-actor round trip: asks the responder with
/// its own ref as the reply handle and sends the next request on each reply.
struct Requester {
    responder: ActorRef<(u64, ReplyTo<u64>)>,
    n: u64,
    warmup: u64,
    i: u64,
    sent_at: Instant,
    hist: Option<Histogram<u64>>,
    error: Option<String>,
    done: Sender<(Histogram<u64>, Option<String>)>,
}

impl Actor for Requester {
    type Msg = u64;
    fn handle(&mut self, ctx: &mut Context<Self>, answer: u64) -> HandleResult {
        let ns = self.sent_at.elapsed().as_nanos() as u64;
        if answer == u64::MAX {
            // Start.
        } else {
            if answer != self.i + 1 && self.error.is_none() {
                self.error = Some(format!("request {} answered {answer}", self.i));
            }
            if self.i >= self.warmup {
                if let Some(h) = self.hist.as_mut() {
                    h.saturating_record(ns.max(1));
                }
            }
            self.i += 1;
        }
        if self.i == self.warmup + self.n {
            if let Some(h) = self.hist.take() {
                let _ = self.done.send((h, self.error.take()));
            }
            return Ok(());
        }
        self.sent_at = Instant::now();
        self.responder.tell((self.i, ctx.myself()));
        Ok(())
    }
}

/// Actor-to-actor request and reply: a requester actor on the same
/// dispatcher tells the responder with its own ref as the `ReplyTo`.
pub fn measure_actor_reply(system: &ActorSystem, n: u64) -> crate::Result<Row> {
    let responder = system.spawn_anonymous(Props::new(|| Responder))?;
    let hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let (tx, rx) = channel();
    let requester = {
        let responder = responder.clone();
        let hist = std::sync::Mutex::new(Some(hist));
        system.spawn_anonymous(Props::new(move || Requester {
            responder: responder.clone(),
            n,
            warmup: n / 10,
            i: 0,
            sent_at: Instant::now(),
            hist: hist.lock().expect("not poisoned").take(),
            error: None,
            done: tx.clone(),
        }))?
    };
    requester.tell(u64::MAX);
    let (hist, error) = rx
        .recv_timeout(Duration::from_secs(300))
        .map_err(|_| "timed out waiting for the requester actor")?;
    if let Some(e) = error {
        return Err(e.into());
    }
    system.stop(&requester);
    system.stop(&responder);
    Ok(row(
        "volley",
        json!({
            "mode": "actor-reply",
            "requests": n,
            "p50_ns": hist.value_at_quantile(0.50),
            "p99_ns": hist.value_at_quantile(0.99),
            "mean_ns": hist.mean(),
        }),
    ))
}

/// `n` measured asks after `n/10` unrecorded ones, each answer checked.
pub fn measure(ctx: &Ctx, system: &ActorSystem, n: u64) -> crate::Result<Row> {
    let responder = system.spawn_anonymous(Props::new(|| Responder))?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let timeout = Duration::from_secs(10);
    ctx.rt.block_on(async {
        for i in 0..n / 10 + n {
            let t0 = Instant::now();
            let answer = responder.ask(|r| (i, r), timeout).await?;
            let ns = t0.elapsed().as_nanos() as u64;
            if answer != i + 1 {
                return Err(format!("ask {i} answered {answer}, expected {}", i + 1).into());
            }
            if i >= n / 10 {
                hist.saturating_record(ns.max(1));
            }
        }
        Ok::<(), crate::Error>(())
    })?;
    system.stop(&responder);
    Ok(row(
        "volley",
        json!({
            "mode": "ask",
            "requests": n,
            "p50_ns": hist.value_at_quantile(0.50),
            "p99_ns": hist.value_at_quantile(0.99),
            "mean_ns": hist.mean(),
        }),
    ))
}

fn volley(ctx: &Ctx, n: u64, runs: usize, actor_reply: bool) -> crate::Result<Row> {
    let system = ActorSystem::new("ask")?;
    let mut rows = Vec::new();
    for _ in 0..runs {
        rows.push(if actor_reply {
            measure_actor_reply(&system, n)?
        } else {
            measure(ctx, &system, n)?
        });
    }
    ctx.rt.block_on(system.terminate());
    Ok(median_row(&rows, "p50_ns").expect("at least one run"))
}

fn draw(report: &Report, path: &Path) -> crate::Result<()> {
    let bars = |key: &str| -> Vec<(String, f64)> {
        report
            .rows
            .iter()
            .filter_map(|r| Some((super::spawn::label(r)?, num(r, key)? / 1e3)))
            .collect()
    };
    chart::bars(
        path,
        &format!(
            "ask round trip, one in flight — {} cores, {}",
            report.machine.cores, report.machine.cpu
        ),
        &[
            BarPanel {
                title: "p50 (lower is better)".into(),
                y_label: "µs".into(),
                bars: bars("p50_ns"),
            },
            BarPanel {
                title: "p99 (lower is better)".into(),
                y_label: "µs".into(),
                bars: bars("p99_ns"),
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn asks_are_answered_and_measured() {
        let ctx = Ctx::new(crate::cli::Cli::parse_from(["volley-bench", "ask-local"]));
        let system = ActorSystem::new("ask-test").unwrap();
        let r = measure(&ctx, &system, 200).unwrap();
        assert_eq!(r["requests"], 200);
        assert!(num(&r, "p50_ns").unwrap() > 0.0);
        assert!(num(&r, "p99_ns").unwrap() >= num(&r, "p50_ns").unwrap());
        let r = measure_actor_reply(&system, 200).unwrap();
        assert_eq!(r["mode"], "actor-reply");
        assert!(num(&r, "p50_ns").unwrap() > 0.0);
        ctx.rt.block_on(system.terminate());
    }
}
