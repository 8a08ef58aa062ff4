//! Cases ported from Pekko's `SchedulerSpec` (actor-tests,
//! `org/apache/pekko/actor/SchedulerSpec.scala`, with its
//! `LightArrayRevolverSchedulerSpec` part), in volley's API
//! (`system.scheduler()`). Most run on a manual clock, so they are exact
//! and fast; the two about real time assert only lower bounds on time
//! (nothing fires early) plus one generous catch-up bound.
//!
//! Ported, for fixed delay and fixed rate where the spec runs both: "schedule
//! more than once", "stop continuous scheduling if the receiving actor has
//! been terminated", "stop continuous scheduling if the task throws
//! exception", "schedule once", "be cancellable", "be canceled if cancel
//! is performed before execution", "not be canceled if cancel is performed
//! after execution", "be cancellable during initial delay", "be
//! cancellable after initial delay", "never fire prematurely", "handle
//! timeouts equal to multiple of wheel period", "survive being stressed
//! with cancellation" (10 000 tasks on the manual clock instead of a
//! million on real time), "reject periodic tasks scheduled with zero
//! interval", "adjust for scheduler inaccuracy" / "not be affected by long
//! running task" versus "keep delay after task completed" (as catch-up on
//! a stalled runtime), "reliably reject jobs when shutting down" (as
//! scheduling on a terminated system), and "schedule with different
//! initial delay and frequency" (exactly, on the manual clock).
//!
//! Skipped, with the reason: "reject periodic tasks scheduled with
//! negative interval" (a `Duration` cannot be negative); "reject tasks
//! scheduled too far into the future" / "with too long interval" (volley
//! shortens such delays to `Scheduler::MAX_DELAY` instead; see
//! `duration_max_delays_do_not_panic`); "notify callback if cancel is
//! performed ..." (no `SchedulerTask.cancelled` hook); "... throws
//! IllegalStateException" (Rust has one panic kind: the panic case covers
//! it); "pick up schedule after actor restart" (a restart is not a
//! termination, and an `ActorRef` outlives restarts); "survive being
//! stressed without cancellation", "survive vicious enqueueing", the
//! wheel-driver cases (multiple buckets, oversleeping timer thread, wheel
//! rounds / ticks / clock wrap-around), "run TaskRunOnClose when Scheduler
//! is closed" and "be able to adjust the config": they test the hashed
//! wheel's internals and throughput, and volley has no wheel.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::pekko::ManualCase as Case;
use volley::{ActorRef, Cancellable, Scheduler, SchedulerError};
use volley_testkit::actor_fn;

const MS: Duration = Duration::from_millis(1);

#[derive(Clone, Copy, Debug)]
enum Kind {
    FixedDelay,
    FixedRate,
}

const KINDS: [Kind; 2] = [Kind::FixedDelay, Kind::FixedRate];

/// The spec's `ScheduleAdapter`: one of the two repeating schedules.
fn every(
    s: &Scheduler,
    kind: Kind,
    initial: Duration,
    interval: Duration,
    to: &ActorRef<String>,
    msg: &str,
) -> Result<Cancellable, SchedulerError> {
    match kind {
        Kind::FixedDelay => s.schedule_with_fixed_delay(initial, interval, to, msg.to_string()),
        Kind::FixedRate => s.schedule_at_fixed_rate(initial, interval, to, msg.to_string()),
    }
}

fn every_fn(
    s: &Scheduler,
    kind: Kind,
    initial: Duration,
    interval: Duration,
    f: impl FnMut() + Send + 'static,
) -> Cancellable {
    match kind {
        Kind::FixedDelay => s.schedule_with_fixed_delay_fn(initial, interval, f),
        Kind::FixedRate => s.schedule_at_fixed_rate_fn(initial, interval, f),
    }
    .unwrap()
}

/// A counter a closure bumps, and the closure.
fn counter() -> (Arc<AtomicUsize>, impl FnMut() + Send + Clone + 'static) {
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    (n, move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
}

fn count(n: &AtomicUsize) -> usize {
    n.load(Ordering::SeqCst)
}

/// "schedule more than once": with a zero initial delay the first send is
/// at once, then one per interval, to an actor and for a closure; after
/// `cancel` nothing more. Also "schedule with different initial delay and
/// frequency": the k-th send is at `initial + k * interval`, exactly.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeating_schedules_send_once_per_interval() {
    let case = Case::new("pekko-scheduler-repeat");
    let s = case.system.scheduler();
    for kind in KINDS {
        let tick = every(
            &s,
            kind,
            Duration::ZERO,
            50 * MS,
            &case.probe.actor_ref(),
            "tick",
        );
        let tick = tick.unwrap();
        case.time.advance(Duration::ZERO);
        case.probe.expect_msg("tick".into());
        case.time.advance(100 * MS);
        case.probe.expect_msg("tick".into());
        case.probe.expect_msg("tick".into());
        assert!(tick.cancel(), "{kind:?}");
        case.time.advance(500 * MS);
        case.probe.expect_no_msg(50 * MS);

        let (n, f) = counter();
        let task = every_fn(&s, kind, Duration::from_secs(1), 300 * MS, f);
        case.time.advance(999 * MS);
        assert_eq!(count(&n), 0, "{kind:?}: not before the initial delay");
        case.time.advance(MS);
        assert_eq!(count(&n), 1, "{kind:?}: at the initial delay");
        case.time.advance(599 * MS);
        assert_eq!(count(&n), 2, "{kind:?}: at 1.3 s, not yet at 1.6 s");
        case.time.advance(MS);
        assert_eq!(count(&n), 3, "{kind:?}: at 1.6 s");
        assert!(task.cancel());
        assert_eq!(case.time.pending_timers(), 0);
    }
    case.system.terminate().await;
}

/// "stop continuous scheduling if the receiving actor has been
/// terminated": the schedule ends itself (its timer is gone, `cancel`
/// finds nothing to cancel) and sends nothing more.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeating_sends_stop_once_the_target_has_terminated() {
    let case = Case::new("pekko-scheduler-target-stops");
    let s = case.system.scheduler();
    for kind in KINDS {
        let probe = case.probe.actor_ref();
        let actor = case
            .system
            // Forwards what it gets to the probe (the spec's echo actor).
            .spawn_anonymous(actor_fn(move |_, msg: String| {
                probe.tell(msg);
                Ok(())
            }))
            .unwrap();
        let task = every(&s, kind, Duration::ZERO, 100 * MS, &actor, "msg").unwrap();
        case.time.advance(Duration::ZERO);
        case.probe.expect_msg("msg".into());
        case.probe.watch(&actor);
        case.system.stop(&actor);
        case.probe.expect_terminated(&actor);
        case.time.advance(500 * MS);
        case.probe.expect_no_msg(50 * MS);
        assert_eq!(case.time.pending_timers(), 0, "{kind:?} stopped itself");
        assert!(!task.cancel() && !task.is_cancelled(), "{kind:?}");
    }
    case.system.terminate().await;
}

/// "stop continuous scheduling if the task throws exception": the third
/// run panics; it is logged, there is no fourth, and the panic does not
/// reach the thread advancing the clock.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_task_stops_repeating() {
    common::quiet_deliberate_panics();
    let case = Case::new("pekko-scheduler-task-panics");
    let s = case.system.scheduler();
    for kind in KINDS {
        let (n, mut f) = counter();
        let runs = n.clone();
        let task = every_fn(&s, kind, Duration::ZERO, 20 * MS, move || {
            f();
            if count(&runs) == 3 {
                panic!("failing on purpose");
            }
        });
        case.time.advance(200 * MS);
        assert_eq!(count(&n), 3, "{kind:?}");
        assert_eq!(case.time.pending_timers(), 0);
        assert!(!task.cancel());
    }
    case.system.terminate().await;
}

/// "schedule once": a message and a closure, both due at 300 ms, come at
/// 300 ms and not before, and once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_once_runs_once_at_its_delay() {
    let case = Case::new("pekko-scheduler-once");
    let s = case.system.scheduler();
    let probe = case.probe.actor_ref();
    let to_actor = s.schedule_once(300 * MS, &probe, "tick".into()).unwrap();
    let p = probe.clone();
    let to_fn = s
        .schedule_once_fn(300 * MS, move || p.tell("fn".into()))
        .unwrap();
    case.time.advance(299 * MS);
    case.probe.expect_no_msg(50 * MS);
    case.time.advance(MS);
    case.probe.expect_msg("tick".into());
    case.probe.expect_msg("fn".into());
    case.time.advance(Duration::from_secs(2));
    case.probe.expect_no_msg(50 * MS);
    assert!(!to_actor.is_cancelled() && !to_fn.is_cancelled());
    assert_eq!(case.time.pending_timers(), 0);
    case.system.terminate().await;
}

/// "be cancellable" (ticket #372) and "be canceled if cancel is performed
/// before execution": a cancelled single schedule never runs; the first
/// `cancel` says true, the next false, and it stays cancelled.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_before_execution_prevents_it_and_answers_true_once() {
    let case = Case::new("pekko-scheduler-cancel-before");
    let s = case.system.scheduler();
    for _ in 0..10 {
        let task = s
            .schedule_once(
                Duration::from_secs(1),
                &case.probe.actor_ref(),
                "fail".into(),
            )
            .unwrap();
        assert!(task.cancel());
    }
    let (n, f) = counter();
    let task = s.schedule_once_fn(Duration::from_secs(10), f).unwrap();
    assert!(task.cancel());
    assert!(task.is_cancelled());
    assert!(!task.cancel());
    assert!(task.is_cancelled());
    assert_eq!(case.time.pending_timers(), 0, "cancelling disarms");
    case.time.advance(Duration::from_secs(20));
    case.probe.expect_no_msg(100 * MS);
    assert_eq!(count(&n), 0);
    case.system.terminate().await;
}

/// "not be canceled if cancel is performed after execution".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_after_execution_answers_false() {
    let case = Case::new("pekko-scheduler-cancel-after");
    let (n, f) = counter();
    let task = case
        .system
        .scheduler()
        .schedule_once_fn(10 * MS, f)
        .unwrap();
    case.time.advance(10 * MS);
    assert_eq!(count(&n), 1);
    assert!(!task.cancel());
    assert!(!task.is_cancelled());
    assert!(!task.cancel());
    assert!(!task.is_cancelled());
    case.system.terminate().await;
}

/// "be cancellable during initial delay" and "be cancellable after
/// initial delay", for both repeating kinds.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeating_schedules_are_cancellable_before_and_after_the_first_run() {
    let case = Case::new("pekko-scheduler-cancel-repeating");
    let s = case.system.scheduler();
    for kind in KINDS {
        let (n, f) = counter();
        let task = every_fn(&s, kind, 200 * MS, 10 * MS, f);
        case.time.advance(10 * MS);
        assert!(task.cancel());
        case.time.advance(300 * MS);
        assert_eq!(count(&n), 0, "{kind:?}: cancelled during the initial delay");

        let (n, f) = counter();
        let task = every_fn(&s, kind, 90 * MS, 500 * MS, f);
        case.time.advance(290 * MS);
        assert!(task.cancel());
        assert!(!task.cancel());
        case.time.advance(600 * MS);
        assert_eq!(count(&n), 1, "{kind:?}: cancelled after the first run");
        assert_eq!(case.time.pending_timers(), 0);
    }
    case.system.terminate().await;
}

/// "handle timeouts equal to multiple of wheel period": 3200 ms is 100
/// ticks of Pekko's 32-slot test wheel; here it is an ordinary deadline.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_of_whole_wheel_rounds_fires_on_time() {
    let case = Case::new("pekko-scheduler-wheel-multiple");
    let (n, f) = counter();
    let _job = case
        .system
        .scheduler()
        .schedule_once_fn(3200 * MS, f)
        .unwrap();
    case.time.advance(3199 * MS);
    assert_eq!(count(&n), 0);
    case.time.advance(MS);
    assert_eq!(count(&n), 1);
    case.system.terminate().await;
}

/// "survive being stressed with cancellation", reduced and exact: 10 000
/// tasks due over 3 s; after 500 ms every task is cancelled. Exactly the
/// ones not yet run are cancelled, and exactly those never run.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_thousands_of_tasks_midway_is_exact() {
    let case = Case::new("pekko-scheduler-stress");
    let s = case.system.scheduler();
    let ran: Arc<Mutex<Vec<bool>>> = Arc::new(Mutex::new(vec![false; 10_000]));
    let mut seed: u64 = 0x5eed;
    let mut delays = Vec::new();
    let tasks: Vec<Cancellable> = (0..10_000)
        .map(|i| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let delay = Duration::from_millis((seed >> 33) % 3000);
            delays.push(delay);
            let ran = ran.clone();
            s.schedule_once_fn(delay, move || ran.lock().unwrap()[i] = true)
                .unwrap()
        })
        .collect();
    case.time.advance(500 * MS);
    let cancelled: Vec<bool> = tasks.iter().map(Cancellable::cancel).collect();
    case.time.advance(Duration::from_secs(3));
    let ran = ran.lock().unwrap().clone();
    for i in 0..tasks.len() {
        assert_eq!(
            cancelled[i],
            delays[i] > 500 * MS,
            "task {i} ({:?})",
            delays[i]
        );
        assert_eq!(ran[i], !cancelled[i], "task {i} ran iff not cancelled");
        assert_eq!(tasks[i].is_cancelled(), cancelled[i]);
    }
    assert!(cancelled.iter().any(|c| *c) && cancelled.iter().any(|c| !c));
    assert_eq!(case.time.pending_timers(), 0);
    case.system.terminate().await;
}

/// "reject periodic tasks scheduled with zero interval" (fixed delay and
/// fixed rate, messages and closures): refused, nothing armed or sent. A
/// zero *initial* delay is fine.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_interval_is_refused() {
    let case = Case::new("pekko-scheduler-zero-interval");
    let s = case.system.scheduler();
    for kind in KINDS {
        let refused = every(
            &s,
            kind,
            100 * MS,
            Duration::ZERO,
            &case.probe.actor_ref(),
            "no",
        );
        assert_eq!(refused.unwrap_err(), SchedulerError::ZeroInterval);
    }
    let (n, f) = counter();
    let refused = s.schedule_with_fixed_delay_fn(Duration::ZERO, Duration::ZERO, f.clone());
    assert_eq!(refused.unwrap_err(), SchedulerError::ZeroInterval);
    let refused = s.schedule_at_fixed_rate_fn(Duration::ZERO, Duration::ZERO, f);
    assert_eq!(refused.unwrap_err(), SchedulerError::ZeroInterval);
    assert_eq!(case.time.pending_timers(), 0);
    case.time.advance(Duration::from_secs(1));
    case.probe.expect_no_msg(50 * MS);
    assert_eq!(count(&n), 0);
    case.system.terminate().await;
}

/// A delay or interval of `Duration::MAX` arms a schedule that does not
/// fire in practice, and does not panic (adding it to an `Instant` would).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_max_delays_do_not_panic() {
    let case = Case::new("pekko-scheduler-max");
    let s = case.system.scheduler();
    let probe = case.probe.actor_ref();
    let never = s
        .schedule_once(Duration::MAX, &probe, "never".into())
        .unwrap();
    for kind in KINDS {
        let _once = every(&s, kind, Duration::ZERO, Duration::MAX, &probe, "first").unwrap();
        let _late = every(&s, kind, Duration::MAX, 10 * MS, &probe, "late").unwrap();
    }
    case.time.advance(Duration::ZERO);
    case.probe.expect_msg("first".into());
    case.probe.expect_msg("first".into());
    case.time.advance(Duration::from_secs(50 * 365 * 24 * 3600));
    case.probe.expect_no_msg(50 * MS);
    assert!(never.cancel());
    case.system.terminate().await;
}

/// "reliably reject jobs when shutting down": once the system has
/// terminated, scheduling fails with a clear error, and work still pending
/// does not run.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_system_refuses_work_and_runs_none_pending() {
    let case = Case::new("pekko-scheduler-terminated");
    let s = case.system.scheduler();
    let (n, f) = counter();
    let _pending = s
        .schedule_once_fn(Duration::from_secs(1), f.clone())
        .unwrap();
    case.system.terminate().await;
    let refused = s.schedule_once_fn(Duration::ZERO, f.clone()).unwrap_err();
    assert!(
        matches!(&refused, SchedulerError::Terminated { system } if system == "pekko-scheduler-terminated")
    );
    assert!(refused.to_string().contains("terminated"), "{refused}");
    let refused = s.schedule_at_fixed_rate_fn(Duration::ZERO, MS, f);
    assert!(matches!(refused, Err(SchedulerError::Terminated { .. })));
    case.time.advance(Duration::from_secs(2));
    assert_eq!(count(&n), 0);
}

/// "never fire prematurely", on real time: 200 closures, each due 20 ms
/// after it was scheduled (one scheduled every millisecond), none runs
/// before its deadline. Only a lower bound on time is asserted.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_fires_prematurely_on_real_time() {
    let system = common::system("pekko-scheduler-premature").unwrap();
    let s = system.scheduler();
    let early = Arc::new(Mutex::new(Vec::new()));
    let (n, f) = counter();
    for _ in 0..200 {
        let (early, scheduled, mut f) = (early.clone(), Instant::now(), f.clone());
        s.schedule_once_fn(20 * MS, move || {
            if scheduled.elapsed() < 20 * MS {
                early.lock().unwrap().push(scheduled.elapsed());
            }
            f();
        })
        .unwrap();
        std::thread::sleep(MS);
    }
    common::eventually("every task to run", || count(&n) == 200);
    assert!(early.lock().unwrap().is_empty(), "early: {early:?}");
    system.terminate().await;
}

/// Fixed rate versus fixed delay on a stalled runtime (Pekko's "adjust for
/// scheduler inaccuracy" / "not be affected by long running task" against
/// "keep delay after task completed"). The system's one I/O thread, which
/// drives its timers, is blocked for 20 intervals. Fixed delay never runs
/// two ticks much less than an interval apart; fixed rate makes up the
/// missed ticks in a burst (runs less than half an interval apart).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_rate_catches_up_after_a_stall_and_fixed_delay_does_not() {
    let interval = 25 * MS;
    for kind in KINDS {
        let settings = volley::Settings {
            io_threads: 1,
            ..Default::default()
        };
        let system = common::system_with("pekko-scheduler-stall", settings).unwrap();
        let runs: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let r = runs.clone();
        let task = every_fn(
            &system.scheduler(),
            kind,
            Duration::ZERO,
            interval,
            move || r.lock().unwrap().push(Instant::now()),
        );
        common::eventually("a first run", || !runs.lock().unwrap().is_empty());
        let (release, stalled) = std::sync::mpsc::channel::<()>();
        let (started, wait_started) = std::sync::mpsc::channel::<()>();
        system.runtime_handle().spawn(async move {
            started.send(()).unwrap();
            let _ = stalled.recv();
        });
        wait_started.recv().unwrap();
        std::thread::sleep(interval * 20);
        let released = Instant::now();
        release.send(()).unwrap();
        // Past the window counted below, and some ticks after the stall.
        common::eventually("ticks after the stall", || {
            let after = runs
                .lock()
                .unwrap()
                .iter()
                .filter(|t| **t >= released)
                .count();
            after >= 5 && released.elapsed() >= interval * 10
        });
        assert!(task.cancel());
        let runs = runs.lock().unwrap().clone();
        let gaps: Vec<Duration> = runs.windows(2).map(|w| w[1] - w[0]).collect();
        // Runs after the stall that came less than half an interval after
        // the one before: the catch-up burst. Only lower bounds on time
        // are asserted, which a loaded machine cannot break: tokio counts
        // a tick as missed once it is 5 ms late, so an on-time tick may
        // follow a slightly late one by up to 5 ms less than an interval.
        let burst = runs
            .windows(2)
            .filter(|w| w[0] >= released && w[1] - w[0] < interval / 2)
            .count();
        match kind {
            Kind::FixedDelay => {
                assert!(gaps.iter().all(|g| *g + 6 * MS >= interval), "{gaps:?}");
                assert_eq!(burst, 0, "no burst after the stall: {gaps:?}");
            }
            Kind::FixedRate => assert!(burst >= 5, "a burst after the stall: {gaps:?}"),
        }
        system.terminate().await;
    }
}
