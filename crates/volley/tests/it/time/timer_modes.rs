//! Fixed-rate and fixed-delay timers (Akka's `startTimerAtFixedRate` and
//! `startTimerWithFixedDelay`, TimerSpec): both repeat after their initial
//! delay; when the runtime that drives them stalls, fixed rate makes up the
//! sends it missed and fixed delay does not.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::eventually;
use volley::{ActorRef, ActorSystem, Props, Settings};
use volley_testkit::{actor_fn_with, FnActor, ManualTime, TestProbe};

#[derive(Clone)]
enum Msg {
    Tick,
}

/// An actor that starts one timer when it starts, counts its messages and
/// reports each to `report`, if given.
fn ticker(
    rate: bool,
    initial: Duration,
    interval: Duration,
    count: Arc<AtomicUsize>,
    report: Option<ActorRef<&'static str>>,
) -> Props<FnActor<Msg>> {
    actor_fn_with((), move |_, _ctx, Msg::Tick| {
        count.fetch_add(1, Ordering::SeqCst);
        if let Some(report) = &report {
            report.tell(if rate { "rate" } else { "delay" });
        }
        Ok(())
    })
    .on_start(move |_, ctx| {
        if rate {
            ctx.schedule_at_fixed_rate("t", initial, interval, Msg::Tick);
        } else {
            ctx.schedule_with_fixed_delay("t", initial, interval, Msg::Tick);
        }
        Ok(())
    })
    .props()
}

/// Spawns a `ticker` with delays in milliseconds; returns its count.
fn counter(
    system: &ActorSystem,
    name: &str,
    rate: bool,
    initial: u64,
    interval: u64,
    report: Option<ActorRef<&'static str>>,
) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let (initial, interval) = (
        Duration::from_millis(initial),
        Duration::from_millis(interval),
    );
    let props = ticker(rate, initial, interval, count.clone(), report);
    system.spawn(name, props).unwrap();
    count
}

/// Both kinds wait their initial delay, then repeat once per interval (on
/// manual time nothing is late, so the two kinds agree).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_kinds_repeat_after_their_initial_delay() {
    let time = ManualTime::new();
    let system = common::system_with("timer-modes", time.settings(Settings::default())).unwrap();
    let probe = TestProbe::new(&system);
    counter(
        &system,
        "rate",
        true,
        300_000,
        20_000,
        Some(probe.actor_ref()),
    );
    counter(
        &system,
        "delay",
        false,
        300_000,
        20_000,
        Some(probe.actor_ref()),
    );
    time.wait_for_timers(2);
    time.advance(Duration::from_secs(299));
    assert_eq!(time.next_due(), Some(Duration::from_secs(1)), "none fired");
    time.advance(Duration::from_secs(1));
    let mut first = probe.receive_n(2);
    first.sort();
    assert_eq!(first, ["delay", "rate"]);
    time.advance(Duration::from_secs(60));
    let mut next = probe.receive_n(6);
    next.sort();
    assert_eq!(next, ["delay", "delay", "delay", "rate", "rate", "rate"]);
    assert_eq!(time.next_due(), Some(Duration::from_secs(20)));
    system.terminate().await;
}

/// The timers run on the system's runtime (one I/O thread here); a task
/// that blocks it for 600 ms makes both miss about 60 sends at 10 ms. Right
/// after, fixed rate has made them up in a burst; fixed delay has not.
#[volley_testkit::each_dispatcher]
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
    let rate = counter(&system, "rate", true, 10, 10, None);
    let delay = counter(&system, "delay", false, 10, 10, None);
    eventually("both running", || {
        rate.load(Ordering::SeqCst) > 0 && delay.load(Ordering::SeqCst) > 0
    });
    let (rate_before, delay_before) = (rate.load(Ordering::SeqCst), delay.load(Ordering::SeqCst));
    let stall = system.runtime_handle().spawn(async {
        std::thread::sleep(Duration::from_millis(600));
    });
    stall.await.unwrap();
    // Fixed rate's burst of made-up sends; fixed delay is read right after.
    volley_testkit::await_cond("fixed rate's burst", || {
        rate.load(Ordering::SeqCst) - rate_before >= 40
    });
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

/// `Duration::MAX` as the initial delay means "not in this lifetime": the
/// timer is armed (no overflow, no failed actor) and never fires, on the
/// system's clock and on manual time alike.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initial_delay_of_duration_max_never_fires() {
    let time = ManualTime::new();
    let manual =
        common::system_with("timer-max-manual", time.settings(Settings::default())).unwrap();
    let real = common::system("timer-max").unwrap();
    let mut counts = Vec::new();
    for (system, rate) in [
        (&manual, true),
        (&manual, false),
        (&real, true),
        (&real, false),
    ] {
        let count = Arc::new(AtomicUsize::new(0));
        let props = ticker(
            rate,
            Duration::MAX,
            Duration::from_millis(1),
            count.clone(),
            None,
        );
        let actor = system.spawn_anonymous(props).unwrap();
        counts.push((actor, count));
    }
    time.wait_for_timers(2);
    time.advance(Duration::from_secs(3600));
    // A window for a wrong send to arrive (what is checked).
    tokio::time::sleep(Duration::from_millis(50)).await;
    for (actor, count) in &counts {
        assert_eq!(count.load(Ordering::SeqCst), 0);
        assert!(!actor.is_terminated(), "the actor did not fail");
    }
    manual.terminate().await;
    real.terminate().await;
}
