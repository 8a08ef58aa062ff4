//! Spawning and stopping 100,000 actors returns memory to where it started,
//! and the tell hot path allocates nothing beyond the mailbox's own storage.
//! (Own test binary: it installs a counting global allocator.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley::{Actor, ActorSystem, Context, HandleResult, MailboxConfig, Overflow, Props};

struct Counting;

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static SIZES: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

// SAFETY: forwards every call to the system allocator unchanged; the
// counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        SIZES[(layout.size() / 64).min(63)].fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Idle;
impl Actor for Idle {
    type Msg = ();
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }
}

enum SpawnerMsg {
    Spawn(u32, volley::ActorRef<()>),
}

struct Spawner;
impl Actor for Spawner {
    type Msg = SpawnerMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: SpawnerMsg) -> HandleResult {
        let SpawnerMsg::Spawn(n, done) = msg;
        for _ in 0..n {
            ctx.spawn_anonymous(Props::new(|| Idle))?;
        }
        done.tell(());
        Ok(())
    }
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One test function so the two measurements never overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn memory_and_allocation_budget() {
    spawn_and_stop_returns_memory().await;
    tell_allocates_only_mailbox_blocks().await;
}

/// What may stay allocated after 100,000 actors are gone: the work-stealing
/// deques keep the capacity they grew to for the 100,000 stop tasks (up to
/// about 2 MiB each, freed lazily by epoch reclamation). 25 bytes per actor:
/// any real leak of a cell (about 500 bytes) fails this by a factor of 20.
const LEFTOVER_LIMIT: i64 = 2_500_000;

async fn spawn_and_stop_returns_memory() {
    const N: u32 = 100_000;
    let system = ActorSystem::new("mem").unwrap();
    // Warm up once so lazily built runtime structures are not counted.
    for round in 0..2 {
        let baseline = LIVE_BYTES.load(Ordering::SeqCst);
        let spawner = system.spawn("spawner", Props::new(|| Spawner)).unwrap();
        spawner
            .ask(|r| SpawnerMsg::Spawn(N, r), Duration::from_secs(60))
            .await
            .unwrap();
        let peak = LIVE_BYTES.load(Ordering::SeqCst);
        assert!(system.stop(&spawner));
        wait_until("spawner and children stopped", || spawner.is_terminated());
        drop(spawner);
        // The work-stealing deques free their grown buffers through epoch
        // reclamation, which only advances while the deques are used: churn
        // them a little so that deferred frees happen before measuring.
        churn(&system).await;
        // Give the last cells a moment to be released by their workers.
        let mut after = LIVE_BYTES.load(Ordering::SeqCst);
        for _ in 0..200 {
            if after - baseline < LEFTOVER_LIMIT {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            after = LIVE_BYTES.load(Ordering::SeqCst);
        }
        let per_actor = (peak - baseline) as f64 / N as f64;
        eprintln!(
            "round {round}: {per_actor:.0} B per idle actor while alive, {} B left after stop",
            after - baseline
        );
        assert!(
            round == 0 || after - baseline < LEFTOVER_LIMIT,
            "{} bytes still live after stopping {N} actors",
            after - baseline
        );
    }
    system.terminate().await;
}

async fn churn(system: &ActorSystem) {
    let seen = Arc::new(AtomicU64::new(0));
    let s2 = seen.clone();
    let c = system
        .spawn_anonymous(Props::new(move || Counter(s2.clone())))
        .unwrap();
    for i in 1..=2_000u64 {
        c.tell(1);
        if i % 100 == 0 {
            wait_until("churn", || seen.load(Ordering::SeqCst) == i);
        }
    }
    c.graceful_stop();
    wait_until("churn actor stopped", || c.is_terminated());
}

struct Counter(Arc<AtomicU64>);
impl Actor for Counter {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, n: u64) -> HandleResult {
        self.0.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }
}

async fn tell_allocates_only_mailbox_blocks() {
    const N: u64 = 100_000;
    let system = ActorSystem::new("alloc").unwrap();
    for (name, mailbox, max_allocs) in [
        // One mailbox block of 31 slots per 31 messages, plus slack for the
        // scheduler: a wake-up from outside the pool takes a slot in the
        // shared injector queue, which allocates a block per 63 wake-ups.
        ("unbounded", MailboxConfig::Unbounded, N / 31 + 256),
        // The bounded mailbox is allocated once at spawn: only the
        // scheduler's blocks remain (one per burst at the very most).
        (
            "bounded",
            MailboxConfig::bounded(1024, Overflow::DropNewest),
            256,
        ),
    ] {
        let seen = Arc::new(AtomicU64::new(0));
        let s2 = seen.clone();
        let counter = system
            .spawn(
                name,
                Props::new(move || Counter(s2.clone())).with_mailbox(mailbox),
            )
            .unwrap();
        // Warm-up: the first messages allocate scheduler and queue buffers.
        for round in 1..=20 {
            for _ in 0..500 {
                counter.tell(1);
            }
            wait_until("warm-up handled", || {
                seen.load(Ordering::SeqCst) == round * 500
            });
        }
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        for c in SIZES.iter() {
            c.store(0, Ordering::SeqCst);
        }
        let mut sent = 0;
        while sent < N {
            // Stay under the bounded mailbox's capacity.
            for _ in 0..512 {
                counter.tell(1);
            }
            sent += 512;
            let target = 10_000 + sent;
            while seen.load(Ordering::SeqCst) < target {
                std::hint::spin_loop();
            }
        }
        let allocs = ALLOCATIONS.load(Ordering::SeqCst) - before;
        // Sizes help tell mailbox blocks from scheduler-queue blocks.
        let sizes: Vec<String> = SIZES
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let c = c.swap(0, Ordering::SeqCst);
                (c > 0).then(|| format!("{}..{} B: {c}", i * 64, i * 64 + 64))
            })
            .collect();
        eprintln!("{name}: {allocs} allocations for {sent} tells ({sizes:?})");
        assert!(
            allocs <= max_allocs,
            "{name}: {allocs} allocations for {sent} tells (budget {max_allocs}): {sizes:?}"
        );
    }
    system.terminate().await;
}
