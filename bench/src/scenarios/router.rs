//! `router`: tell throughput through a round-robin pool router of 8 routees
//! (sender-side routing: the logic runs on the sending thread and enqueues
//! straight into a routee's mailbox), against the same senders telling the
//! 8 routees directly, round-robin, in the same run. Each routee counts into
//! its own cache line; the total is asserted.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Router};

use super::remote_common::load;
use super::{Ctx, Scenario};
use crate::progress::Progress;
use crate::report::{col, num, row, Fmt, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "router",
    about: "tell through a round-robin pool of 8 vs to the 8 routees directly, msgs/s",
    run,
    chart: crate::chart_remote::throughput_bars,
};

pub const ROUTEES: usize = 8;
const SENDERS: usize = 2;
/// Most messages a sender lets be outstanding (bounded queues, bounded
/// memory).
const MAX_OUTSTANDING: u64 = 1 << 20;

#[repr(align(64))]
#[derive(Default)]
struct Slot(AtomicU64);

#[derive(Clone)]
struct Counters {
    slots: Arc<[Slot; 16]>,
    next: Arc<AtomicUsize>,
}

impl Counters {
    fn new() -> Self {
        Counters {
            slots: Arc::new(Default::default()),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }
    fn total(&self) -> u64 {
        self.slots.iter().map(|s| s.0.load(Ordering::Acquire)).sum()
    }
}

struct Counter {
    slot: usize,
    counters: Counters,
}

impl Actor for Counter {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, _n: u64) -> HandleResult {
        let s = &self.counters.slots[self.slot].0;
        s.store(s.load(Ordering::Relaxed) + 1, Ordering::Release);
        Ok(())
    }
}

fn props(counters: &Counters) -> Props<Counter> {
    let counters = counters.clone();
    Props::new(move || Counter {
        slot: counters.next.fetch_add(1, Ordering::Relaxed) % 16,
        counters: counters.clone(),
    })
}

/// Where the senders send.
#[derive(Clone)]
enum Target {
    Router(volley::RouterRef<u64>),
    Direct(Vec<ActorRef<u64>>),
}

/// `n` messages from `SENDERS` threads; returns elapsed until all counted.
fn once(target: &Target, counters: &Counters, n: u64) -> crate::Result<(u64, Duration)> {
    let per = n / SENDERS as u64;
    let n = per * SENDERS as u64;
    let before = counters.total();
    let start = Instant::now();
    let threads: Vec<_> = (0..SENDERS)
        .map(|s| {
            let (target, counters) = (target.clone(), counters.clone());
            std::thread::spawn(move || {
                let mut sent_here = 0u64;
                for i in 0..per {
                    match &target {
                        Target::Router(r) => r.tell(i),
                        Target::Direct(refs) => refs[((i as usize) + s) % refs.len()].tell(i),
                    }
                    sent_here += 1;
                    if sent_here.is_multiple_of(65_536) {
                        // Bound the queues: wait while too much is
                        // outstanding (counted against all senders).
                        let deadline = Instant::now() + Duration::from_secs(60);
                        while (sent_here * SENDERS as u64).saturating_sub(counters.total() - before)
                            > MAX_OUTSTANDING * SENDERS as u64
                            && Instant::now() < deadline
                        {
                            std::thread::yield_now();
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "a sender panicked")?;
    }
    crate::measure::wait_until("the routees to count", Duration::from_secs(120), || {
        counters.total() - before >= n
    })?;
    let elapsed = start.elapsed();
    let counted = counters.total() - before;
    if counted != n {
        return Err(format!("router: sent {n}, counted {counted}").into());
    }
    Ok((counted, elapsed))
}

fn run(ctx: &Ctx) -> crate::Result<Report> {
    let runs = ctx.cli.runs();
    let n = ctx
        .cli
        .messages
        .unwrap_or(if ctx.cli.quick { 4_000_000 } else { 20_000_000 });
    let progress = Progress::new(3);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(
        SCENARIO.name,
        vec![
            col("mode", "mode", Fmt::Plain),
            col("routees", "routees", Fmt::Plain),
            col("senders", "senders", Fmt::Plain),
            col("messages", "messages", Fmt::Plain),
            col("msgs_per_sec", "M msgs/s", Fmt::Millions),
        ],
    );
    progress.start("volley: starting the pool and the direct routees");
    let system = ActorSystem::new("router-bench")?;
    let result = (|| -> crate::Result<Vec<Row>> {
        let pool_counters = Counters::new();
        let router = Router::pool(ROUTEES, props(&pool_counters)).spawn(&system, "pool")?;
        crate::measure::wait_until("the pool's routees", Duration::from_secs(10), || {
            router.routees().len() == ROUTEES
        })?;
        let direct_counters = Counters::new();
        let refs = (0..ROUTEES)
            .map(|_| system.spawn_anonymous(props(&direct_counters)))
            .collect::<Result<Vec<_>, _>>()?;
        let targets = [
            (
                "round-robin pool",
                Target::Router(router.clone()),
                pool_counters,
            ),
            ("direct round-robin", Target::Direct(refs), direct_counters),
        ];
        for (_, t, c) in &targets {
            once(t, c, n / 10)?;
        }
        progress.done();
        let mut results: Vec<Vec<Row>> = vec![Vec::new(), Vec::new()];
        progress.start(&format!("volley: {n} tells each way × {runs}, interleaved"));
        for _ in 0..runs {
            for (i, (mode, t, c)) in targets.iter().enumerate() {
                let (count, elapsed) = once(t, c, n)?;
                results[i].push(row(
                    "volley",
                    json!({
                        "mode": mode,
                        "routees": ROUTEES,
                        "senders": SENDERS,
                        "messages": count,
                        "elapsed_ns": elapsed.as_nanos() as u64,
                        "msgs_per_sec": count as f64 / elapsed.as_secs_f64(),
                    }),
                ));
            }
        }
        progress.done();
        Ok(results
            .iter()
            .map(|r| crate::measure::median_row(r, "msgs_per_sec").expect("runs ≥ 1"))
            .collect())
    })();
    ctx.rt.block_on(system.terminate());
    progress.done();
    progress.finish();
    report.rows = result?;
    if let [r, d] = &report.rows[..] {
        let (a, b) = (
            num(r, "msgs_per_sec").unwrap_or(0.0),
            num(d, "msgs_per_sec").unwrap_or(f64::NAN),
        );
        report.notes.push(format!(
            "pool router / direct = {:.2} (1.00 = routing costs nothing)",
            a / b
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_count_every_message() {
        let system = ActorSystem::new("router-test").unwrap();
        let c = Counters::new();
        let router = Router::pool(ROUTEES, props(&c))
            .spawn(&system, "p")
            .unwrap();
        let (n, _) = once(&Target::Router(router), &c, 10_000).unwrap();
        assert_eq!(n, 10_000);
        let d = Counters::new();
        let refs: Vec<_> = (0..ROUTEES)
            .map(|_| system.spawn_anonymous(props(&d)).unwrap())
            .collect();
        let (n, _) = once(&Target::Direct(refs), &d, 10_001).unwrap();
        assert_eq!(n, 10_000);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(system.terminate());
    }
}
