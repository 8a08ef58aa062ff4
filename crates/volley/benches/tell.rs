//! tell throughput: messages to an actor that counts them.
//!
//! `tell/handled` times `iters` tells plus their handling (the clock stops
//! when the actor has counted the last one); `tell/sender` times only the
//! sender's side of the same tells. Quick: `cargo bench -p volley --bench tell`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};

struct Counter(Arc<AtomicU64>);

impl Actor for Counter {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: u64) -> HandleResult {
        self.0.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

fn wait_for(count: &AtomicU64, target: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::Acquire) < target {
        assert!(Instant::now() < deadline, "actor stopped counting");
        std::hint::spin_loop();
    }
}

fn setup() -> (ActorSystem, ActorRef<u64>, Arc<AtomicU64>) {
    let system = ActorSystem::new("bench").expect("system");
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    let actor = system
        .spawn("counter", Props::new(move || Counter(c.clone())))
        .expect("spawn");
    (system, actor, count)
}

fn tell(c: &mut Criterion) {
    let (system, actor, count) = setup();
    let mut group = c.benchmark_group("tell");
    group.throughput(Throughput::Elements(1));
    group.bench_function("handled", |b| {
        b.iter_custom(|iters| {
            let target = count.load(Ordering::Acquire) + iters;
            let start = Instant::now();
            for i in 0..iters {
                actor.tell(i);
            }
            wait_for(&count, target);
            start.elapsed()
        })
    });
    group.bench_function("sender", |b| {
        b.iter_custom(|iters| {
            let target = count.load(Ordering::Acquire) + iters;
            let start = Instant::now();
            for i in 0..iters {
                actor.tell(i);
            }
            let elapsed = start.elapsed();
            wait_for(&count, target);
            elapsed
        })
    });
    group.finish();
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
    targets = tell
}
criterion_main!(benches);
