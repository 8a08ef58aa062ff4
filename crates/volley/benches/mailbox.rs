//! Mailbox enqueue + dequeue through the public API (the mailbox type is
//! crate-private): tell a burst to an idle actor and wait until it has
//! handled all of it, for the unbounded and a bounded mailbox. Reported per
//! message. Quick: `cargo bench -p volley --bench mailbox`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use volley::{Actor, ActorSystem, Context, HandleResult, MailboxConfig, Overflow, Props};

struct Counter(Arc<AtomicU64>);

impl Actor for Counter {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: u64) -> HandleResult {
        self.0.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

const BURST: u64 = 1_000;

fn mailbox(c: &mut Criterion) {
    let system = ActorSystem::new("bench").expect("system");
    let mut group = c.benchmark_group("mailbox_burst");
    group.throughput(Throughput::Elements(BURST));
    let configs = [
        ("unbounded", MailboxConfig::Unbounded),
        (
            "bounded",
            MailboxConfig::Bounded {
                capacity: 2 * BURST as usize,
                overflow: Overflow::DropNewest,
            },
        ),
    ];
    for (name, config) in configs {
        let count = Arc::new(AtomicU64::new(0));
        let c2 = count.clone();
        let actor = system
            .spawn(
                name,
                Props::new(move || Counter(c2.clone())).with_mailbox(config),
            )
            .expect("spawn");
        group.bench_function(BenchmarkId::new("enqueue_dequeue", name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let target = count.load(Ordering::Acquire) + BURST;
                    let start = Instant::now();
                    for i in 0..BURST {
                        actor.tell(i);
                    }
                    while count.load(Ordering::Acquire) < target {
                        std::hint::spin_loop();
                    }
                    total += start.elapsed();
                }
                total
            })
        });
    }
    group.finish();
    assert_eq!(
        system.dead_letter_count(),
        0,
        "a bounded mailbox overflowed"
    );
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(system.terminate());
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = mailbox
}
criterion_main!(benches);
