//! Fixed-rate and fixed-delay timers (Akka's `startTimerAtFixedRate` and
//! `startTimerWithFixedDelay`, TimerSpec): both repeat after their initial
//! delay; when the runtime that drives them stalls, fixed rate makes up the
//! sends it missed and fixed delay does not.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::eventually;
use volley::{Actor, ActorSystem, Context, HandleResult, Props, Settings};

#[derive(Clone)]
enum Msg {
    Tick,
}

/// Starts one timer in `pre_start` and counts its messages.
struct Counter {
    rate: bool,
    initial: Duration,
    interval: Duration,
    count: Arc<AtomicUsize>,
}

impl Actor for Counter {
    type Msg = Msg;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if self.rate {
            ctx.schedule_at_fixed_rate("t", self.initial, self.interval, Msg::Tick);
        } else {
            ctx.schedule_with_fixed_delay("t", self.initial, self.interval, Msg::Tick);
        }
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, Msg::Tick: Msg) -> HandleResult {
        self.count.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn counter(
    system: &ActorSystem,
    name: &str,
    rate: bool,
    initial: u64,
    interval: u64,
) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    system
        .spawn(
            name,
            Props::new(move || Counter {
                rate,
                initial: Duration::from_millis(initial),
                interval: Duration::from_millis(interval),
                count: c.clone(),
            }),
        )
        .unwrap();
    count
}

/// Both kinds wait their initial delay, then repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_kinds_repeat_after_their_initial_delay() {
    let system = common::system("timer-modes").unwrap();
    let started = Instant::now();
    let rate = counter(&system, "rate", true, 300, 20);
    let delay = counter(&system, "delay", false, 300, 20);
    tokio::time::sleep(Duration::from_millis(150)).await;
    if started.elapsed() < Duration::from_millis(280) {
        assert_eq!(rate.load(Ordering::SeqCst), 0, "before the initial delay");
        assert_eq!(delay.load(Ordering::SeqCst), 0, "before the initial delay");
    }
    eventually("both repeat", || {
        rate.load(Ordering::SeqCst) >= 3 && delay.load(Ordering::SeqCst) >= 3
    });
    system.terminate().await;
}

/// The timers run on the system's runtime (one I/O thread here); a task
/// that blocks it for 600 ms makes both miss about 60 sends at 10 ms. Right
/// after, fixed rate has made them up in a burst; fixed delay has not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_rate_makes_up_missed_sends_and_fixed_delay_does_not() {
    let system = ActorSystem::with_settings(
        "timer-stall",
        Settings {
            io_threads: 1,
            ..Settings::default()
        },
    )
    .unwrap();
    let rate = counter(&system, "rate", true, 10, 10);
    let delay = counter(&system, "delay", false, 10, 10);
    eventually("both running", || {
        rate.load(Ordering::SeqCst) > 0 && delay.load(Ordering::SeqCst) > 0
    });
    let (rate_before, delay_before) = (rate.load(Ordering::SeqCst), delay.load(Ordering::SeqCst));
    let stall = system.runtime_handle().spawn(async {
        std::thread::sleep(Duration::from_millis(600));
    });
    stall.await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let rate_gain = rate.load(Ordering::SeqCst) - rate_before;
    let delay_gain = delay.load(Ordering::SeqCst) - delay_before;
    assert!(
        rate_gain >= 40,
        "fixed rate made up only {rate_gain} of about 65 sends"
    );
    assert!(
        delay_gain + 25 <= rate_gain,
        "fixed delay {delay_gain} vs fixed rate {rate_gain}: no burst expected"
    );
    system.terminate().await;
}
