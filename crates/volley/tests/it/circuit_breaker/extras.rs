//! What volley's circuit breaker does beyond Pekko's `CircuitBreakerSpec`
//! (ported in `pekko_circuit_breaker.rs`): its settings checks, the guard
//! form (`permit`) an actor uses with `ctx.ask`, calls from actor handlers,
//! calls dropped or panicking, outcomes of calls from an earlier state,
//! listeners that panic, and the real-time timer driver.

use crate::common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use common::breaker::State::{HalfOpen, Open};
use common::breaker::{self, Breaker, Ev, MS};
use volley::{
    AskError, CircuitBreaker, CircuitBreakerError as CbError, CircuitBreakerSettings,
    CircuitBreakerSettingsError, ReplyTo,
};
use volley_testkit::{actor_fn, actor_fn_with};

const T: Duration = Duration::from_secs(10);

async fn half_open(b: &Breaker) {
    b.cb.fail();
    b.advance(b.cb.settings().reset_timeout());
    assert!(b.cb.is_half_open());
    b.take();
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_refused_with_the_reason() {
    let system = common::system("cb-settings").unwrap();
    let zero = CircuitBreakerSettings::new(0, T, T);
    let err = CircuitBreaker::new(&system, zero).unwrap_err();
    assert_eq!(err, CircuitBreakerSettingsError::ZeroMaxFailures);
    assert!(err.to_string().contains("max_failures"), "{err}");
    let shrinking = CircuitBreakerSettings::new(1, T, T).with_exponential_backoff_factor(0.9);
    let err = CircuitBreaker::new(&system, shrinking).unwrap_err();
    assert_eq!(err, CircuitBreakerSettingsError::BackoffFactor(0.9));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_trial_hands_the_trial_back() {
    let b = breaker::short_reset_timeout();
    half_open(&b).await;
    let cb = b.cb.clone();
    let trial =
        tokio::spawn(async move { cb.call(std::future::pending::<Result<(), ()>>()).await });
    common::eventually("the trial's timer", || b.time.pending_timers() == 1);
    assert!(matches!(
        b.cb.with_sync_call(|| Ok::<_, ()>(())),
        Err(CbError::Open { .. })
    ));
    trial.abort();
    assert!(trial.await.unwrap_err().is_cancelled());
    assert!(b.cb.is_half_open(), "a dropped call decides nothing");
    assert_eq!(
        b.cb.with_sync_call(|| Ok::<_, ()>(7)),
        Ok(7),
        "the next call is the trial"
    );
    assert!(b.cb.is_closed());
    // A permit dropped unused in the closed state counts nothing either.
    b.cb.fail();
    b.advance(50 * MS);
    drop(b.cb.permit().unwrap());
    let permit = b.cb.permit().expect("the trial is free again");
    permit.succeed();
    assert!(b.cb.is_closed());
    b.end().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_sync_call_counts_as_a_failure() {
    common::quiet_deliberate_panics();
    let b = breaker::long_call_timeout();
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        b.cb.with_sync_call(|| -> Result<(), ()> { panic!("on purpose") })
    }));
    assert!(unwound.is_err(), "the panic goes on unwinding");
    b.expect(Open, &[Ev::Failure(Duration::ZERO), Ev::Open]);
    b.end().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_listener_does_not_break_the_breaker() {
    common::quiet_deliberate_panics();
    let b = breaker::short_reset_timeout();
    b.cb.on_open(|| panic!("listener failing on purpose"));
    b.cb.fail();
    assert!(b.cb.is_open());
    b.advance(50 * MS);
    assert_eq!(
        b.take(),
        [Ev::Open, Ev::HalfOpen],
        "the other listeners still hear"
    );
    assert_eq!(b.cb.with_sync_call(|| Ok::<_, ()>(1)), Ok(1));
    assert!(b.cb.is_closed());
    b.end().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_counts_only_in_the_state_it_started_in() {
    let b = breaker::short_reset_timeout();
    let slow_success = b.cb.permit().unwrap();
    let slow_failure = b.cb.permit().unwrap();
    b.cb.fail();
    b.advance(50 * MS);
    assert!(b.cb.is_half_open());
    b.take();
    // Akka would let a call from the closed state decide the half-open
    // breaker; volley waits for the trial.
    slow_success.succeed();
    slow_failure.fail();
    b.expect(HalfOpen, &[Ev::Success(50 * MS), Ev::Failure(50 * MS)]);
    b.cb.permit().expect("the trial").succeed();
    assert!(b.cb.is_closed());
    // A permit that reports after the call timeout reports a timeout.
    let late = b.cb.permit().unwrap();
    b.advance(Duration::from_secs(1));
    assert_eq!(
        late.finish(Ok::<_, ()>(1)),
        Err(CbError::Timeout {
            call_timeout: T / 10
        })
    );
    assert!(b.cb.is_open());
    b.end().await;
}

/// A dependency that fails while `down`.
enum Backend {
    Get(ReplyTo<Result<u32, String>>),
    SetDown(bool),
}

type Answer = Result<u32, CbError<String>>;

/// Fronts the backend through a breaker: `Sync` calls a synchronous
/// function in the handler, `Ask` asks the backend and reports the
/// outcome when the reply comes back.
enum Front {
    Sync(bool, ReplyTo<Answer>),
    Ask(ReplyTo<Answer>),
    Done(ReplyTo<Answer>, Answer),
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actors_call_through_the_breaker_from_their_handlers() {
    let b = Breaker::new("cb-actors", CircuitBreakerSettings::new(2, T, T));
    let backend = actor_fn_with(false, |down, _ctx, msg: Backend| {
        match msg {
            Backend::Get(reply) if *down => reply.tell(Err("backend down".into())),
            Backend::Get(reply) => reply.tell(Ok(42)),
            Backend::SetDown(now_down) => *down = now_down,
        }
        Ok(())
    });
    let backend = b.system.spawn("backend", backend.props()).unwrap();
    let (breaker, be) = (b.cb.clone(), backend.clone());
    let front = actor_fn(move |ctx, msg: Front| {
        match msg {
            Front::Sync(ok, reply) => {
                let r = breaker.with_sync_call(|| {
                    if ok {
                        Ok(1)
                    } else {
                        Err("sync failure".to_string())
                    }
                });
                reply.tell(r);
            }
            Front::Ask(reply) => match breaker.permit() {
                Err(open) => reply.tell(Err(open.into())),
                Ok(permit) => ctx.ask(&be, Backend::Get, T, move |r| {
                    let r = r.map_err(|e: AskError| e.to_string()).and_then(|r| r);
                    Front::Done(reply, permit.finish(r))
                }),
            },
            Front::Done(reply, answer) => reply.tell(answer),
        }
        Ok(())
    });
    let front = b.system.spawn("front", front).unwrap();
    let ask = |m: fn(ReplyTo<Answer>) -> Front| front.ask(m, T);
    assert_eq!(ask(Front::Ask).await.unwrap(), Ok(42));
    assert_eq!(front.ask(|r| Front::Sync(true, r), T).await.unwrap(), Ok(1));
    backend.tell(Backend::SetDown(true));
    let failed = ask(Front::Ask).await.unwrap();
    assert_eq!(failed, Err(CbError::Failed("backend down".into())));
    let failed = front.ask(|r| Front::Sync(false, r), T).await.unwrap();
    assert_eq!(failed, Err(CbError::Failed("sync failure".into())));
    assert!(b.cb.is_open());
    let refused = ask(Front::Ask).await.unwrap();
    assert_eq!(refused, Err(CbError::Open { remaining: T }));
    backend.tell(Backend::SetDown(false));
    b.advance(T);
    assert_eq!(ask(Front::Ask).await.unwrap(), Ok(42), "the trial");
    assert!(b.cb.is_closed());
    b.end().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_drives_the_call_and_reset_timeouts() {
    let system = common::system("cb-real-time").unwrap();
    let settings = CircuitBreakerSettings::new(1, 50 * MS, 100 * MS);
    let cb = CircuitBreaker::new(&system, settings).unwrap();
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(T, cb.call(std::future::pending::<Result<(), ()>>())).await;
    assert_eq!(
        r.expect("the call timeout fires"),
        Err(CbError::Timeout {
            call_timeout: 50 * MS
        })
    );
    assert!(started.elapsed() >= 50 * MS, "not before the call timeout");
    assert!(cb.is_open());
    let refused = cb.with_sync_call(|| Ok::<_, ()>(()));
    assert!(matches!(refused, Err(CbError::Open { remaining }) if remaining <= 100 * MS));
    common::eventually("the breaker to turn half-open", || cb.is_half_open());
    assert!(
        started.elapsed() >= 150 * MS,
        "not before the reset timeout"
    );
    assert_eq!(cb.call(async { Ok::<_, ()>(3) }).await, Ok(3));
    assert!(cb.is_closed());
    system.terminate().await;
}
