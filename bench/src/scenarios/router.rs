//! `router`: tell throughput through a round-robin pool router of 8 routees
//! (sender-side routing: the logic runs on the sending thread and enqueues
//! straight into a routee's mailbox), against the same senders telling the
//! 8 routees directly, round-robin, in the same run. Each routee counts into
//! its own cache line; the total is asserted.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Router};

use super::remote_common::load;
use super::{Ctx, Scenario};
use crate::measure::{measure_interleaved, Throughput, Workload};
use crate::progress::Progress;
use crate::report::rows::RouterRow;
use crate::report::{measured, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "router",
    about: "tell through a round-robin pool of 8 vs to the 8 routees directly, msgs/s",
    run: |ctx| Ok(Box::new(run(ctx)?)),
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

/// `n` messages from `SENDERS` threads (rounded down to a multiple of
/// `SENDERS`); returns the count and the time until all were counted.
fn once(target: &Target, counters: &Counters, n: u64) -> crate::Result<Throughput> {
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
                    if sent_here % 65_536 == 0 {
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
    Ok(Throughput::new(counted, elapsed))
}

/// Tells to one [`Target`], counted by its routees' counters.
struct Tells {
    mode: &'static str,
    target: Target,
    counters: Counters,
}

impl Workload for Tells {
    type Run = Throughput;
    type Row = RouterRow;

    fn run(&mut self, messages: u64) -> crate::Result<Throughput> {
        once(&self.target, &self.counters, messages)
    }

    fn row(&self, _messages: u64, run: Throughput) -> RouterRow {
        RouterRow {
            mode: self.mode.to_string(),
            routees: ROUTEES as u64,
            senders: SENDERS as u64,
            messages: run.count,
            elapsed_ns: run.elapsed_ns(),
            msgs_per_sec: run.per_sec(),
        }
    }

    fn figure(row: &RouterRow) -> f64 {
        row.msgs_per_sec
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<RouterRow>> {
    let runs = ctx.cli.runs();
    let n = ctx
        .cli
        .messages
        .unwrap_or(if ctx.cli.quick { 4_000_000 } else { 20_000_000 });
    let progress = Progress::new(3);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(SCENARIO.name, crate::chart::throughput_bars);
    progress.start("volley: starting the pool and the direct routees");
    let system = ActorSystem::new("router-bench")?;
    let result = (|| -> crate::Result<Vec<RouterRow>> {
        let pool_counters = Counters::new();
        let router = Router::pool(ROUTEES, props(&pool_counters)).spawn(&system, "pool")?;
        crate::measure::wait_until("the pool's routees", Duration::from_secs(10), || {
            router.routees().len() == ROUTEES
        })?;
        let direct_counters = Counters::new();
        let refs = (0..ROUTEES)
            .map(|_| system.spawn_anonymous(props(&direct_counters)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ways = [
            Tells {
                mode: "round-robin pool",
                target: Target::Router(router.clone()),
                counters: pool_counters,
            },
            Tells {
                mode: "direct round-robin",
                target: Target::Direct(refs),
                counters: direct_counters,
            },
        ];
        for way in &mut ways {
            way.run(n / 10)?;
        }
        progress.done();
        progress.start(&format!("volley: {n} tells each way × {runs}, interleaved"));
        let rows = measure_interleaved(&mut ways, n, runs)?;
        progress.done();
        Ok(rows)
    })();
    ctx.rt.block_on(system.terminate());
    progress.done();
    progress.finish();
    report.rows = result?
        .into_iter()
        .map(|r| Row::measured("volley", r))
        .collect();
    let rates: Vec<f64> = measured(&report.rows)
        .map(|(_, r)| r.msgs_per_sec)
        .collect();
    if let [pool, direct] = rates[..] {
        report.notes.push(format!(
            "pool router / direct = {:.2} (1.00 = routing costs nothing)",
            pool / direct
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
        let run = once(&Target::Router(router), &c, 10_000).unwrap();
        assert_eq!(run.count, 10_000);
        let d = Counters::new();
        let refs: Vec<_> = (0..ROUTEES)
            .map(|_| system.spawn_anonymous(props(&d)).unwrap())
            .collect();
        let run = once(&Target::Direct(refs), &d, 10_001).unwrap();
        assert_eq!(run.count, 10_000);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(system.terminate());
    }
}
