//! Cases ported from Pekko's `CircuitBreakerSpec` (actor-tests,
//! `org/apache/pekko/pattern/CircuitBreakerSpec.scala`), in volley's API:
//! `withSyncCircuitBreaker` is `with_sync_call`, `withCircuitBreaker` is
//! `call`, a `defineFailureFn` is the `_with` variant's `is_failure`, the
//! spec's latches and probe are the listeners' event log (`common::breaker`).
//! The breakers run on a manual clock, so "the call took a while" is the
//! call advancing the clock, and the reset and call timeouts fire exactly
//! when the test advances past them; the spec's breakers keep their
//! settings.
//!
//! Ported, per group of the spec (sync = `with_sync_call`, async = `call`):
//! - open, sync and async: "throw exceptions when called before reset
//!   timeout" with "invoke onCallBreakerOpen when called before reset
//!   timeout" (`open_fails_fast_with_the_time_left`); "transition to
//!   half-open on reset timeout" with "invoke onHalfOpen during transition
//!   to half-open state" (`open_turns_half_open_at_the_reset_timeout`);
//!   "still be in open state after calling success / fail method"
//!   (`open_ignores_succeed_and_fail`); "invoke onCallFailure when call
//!   results in exception" (`failures_report_their_elapsed_time`);
//!   "increase the reset timeout after it transits to open again"
//!   (`the_reset_timeout_grows_each_time_the_trial_fails`, exact here);
//! - half-open, sync and async: "pass through next call and close on
//!   success" and "... invoke onCallSuccess on success"
//!   (`a_successful_trial_closes`); "close on exception when exception is
//!   defined as call succeeded" (`a_trial_error_counted_as_success_closes`);
//!   "open on exception in call", "re-open on async failure" and "... invoke
//!   onCallFailure on failure" (`a_failed_trial_opens_again`); "open on even
//!   number when even number is defined as failure"
//!   (`a_trial_ok_counted_as_failure_opens_again`); "open on calling fail
//!   method", "close on calling success method"
//!   (`succeed_and_fail_decide_a_half_open_breaker`); "pass through next
//!   call and invoke onCallTimeout on timeout"
//!   (`a_trial_that_times_out_opens_again`); "pass through next call and
//!   invoke onCallBreakerOpen while executing other"
//!   (`only_one_trial_at_a_time`);
//! - closed, sync and async: "allow calls through", "increment failure
//!   count on failure / exception / async failure", "increment failure
//!   count on even number", "increment failure count on fail method",
//!   "invoke onOpen if call fails and breaker transits to open state"
//!   (`closed_counts_failures_and_opens_at_the_limit`); "reset failure count
//!   after success", "... after success method", "... after exception in
//!   call when exception is defined as Success"
//!   (`a_success_resets_the_failure_count`); "throw TimeoutException on
//!   callTimeout" and "invoke onCallTimeout if call timeouts", sync
//!   (`a_sync_call_that_runs_too_long_is_a_timeout`); "increment failure
//!   count on callTimeout" and "invoke onCallTimeout if call timeouts",
//!   async (`an_async_call_times_out_at_the_call_timeout`); "invoke
//!   onCallSuccess if call succeeds", "invoke onCallFailure if call fails"
//!   (`calls_report_their_elapsed_time`).
//!
//! Skipped, with the reason: "increment failure count on callTimeout
//! before call finishes" (sync): volley does not interrupt or watch a
//! synchronous call, it counts the timeout when the call returns, on the
//! calling thread (an async call is counted at its timeout, as tested);
//! "An identified asynchronous circuit breaker" (breakers named in the
//! configuration, with an exception allowlist): volley has no
//! configuration-named breakers; an allowlist is an `is_failure` function,
//! tested above. Pekko's `CircuitBreakerMTSpec` is in
//! `pekko_circuit_breaker_mt.rs`; what volley adds (guards, dropped and
//! stale calls, panics) is in `circuit_breaker.rs`.

use crate::common;

use std::future::pending;
use std::time::Duration;

use common::breaker::State::{Closed, HalfOpen, Open};
use common::breaker::{self, even_number_is_failure, Breaker, Ev, TestException, MS};
use volley::CircuitBreakerError as CbError;

type R = Result<u32, TestException>;
type Out<T = u32> = Result<T, CbError<TestException>>;

const ZERO: Duration = Duration::ZERO;

fn refused(remaining: Duration) -> Out {
    Err(CbError::Open { remaining })
}

fn timed_out(call_timeout: Duration) -> Out {
    Err(CbError::Timeout { call_timeout })
}

fn not_called() -> R {
    panic!("a call the breaker refused ran")
}

/// `f` through the breaker, with `is_failure`: by `with_sync_call_with`, or
/// by `call_with` of a future that runs `f`.
async fn through_with<T>(
    b: &Breaker,
    sync: bool,
    f: impl FnOnce() -> Result<T, TestException>,
    is_failure: impl FnOnce(&Result<T, TestException>) -> bool,
) -> Out<T> {
    if sync {
        b.cb.with_sync_call_with(f, is_failure)
    } else {
        b.cb.call_with(async { f() }, is_failure).await
    }
}

async fn through<T>(
    b: &Breaker,
    sync: bool,
    f: impl FnOnce() -> Result<T, TestException>,
) -> Out<T> {
    through_with(b, sync, f, Result::is_err).await
}

/// A failing call, which `b` lets through.
async fn fail(b: &Breaker, sync: bool) {
    let r = through(b, sync, || R::Err(TestException)).await;
    assert_eq!(r, Err(CbError::Failed(TestException)));
}

/// Opens `b` (max failures 1) with a failing call.
async fn open(b: &Breaker, sync: bool) {
    fail(b, sync).await;
    b.expect(Open, &[Ev::Failure(ZERO), Ev::Open]);
}

/// Opens `b`, then lets its reset timeout pass.
async fn half_open(b: &Breaker, sync: bool) {
    open(b, sync).await;
    b.advance(b.cb.settings().reset_timeout());
    b.expect(HalfOpen, &[Ev::HalfOpen]);
}

/// Runs `scenario` on a fresh breaker from `make`, once with synchronous
/// calls and once with async ones.
async fn both(make: fn() -> Breaker, scenario: impl AsyncFn(&Breaker, bool)) {
    for sync in [true, false] {
        let b = make();
        scenario(&b, sync).await;
        b.end().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_fails_fast_with_the_time_left() {
    both(breaker::long_reset_timeout, async |b, sync| {
        open(b, sync).await;
        b.advance(1200 * MS);
        assert_eq!(through(b, true, not_called).await, refused(3800 * MS));
        assert_eq!(through(b, false, not_called).await, refused(3800 * MS));
        b.expect(Open, &[Ev::BreakerOpen, Ev::BreakerOpen]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_turns_half_open_at_the_reset_timeout() {
    both(breaker::short_reset_timeout, async |b, sync| {
        open(b, sync).await;
        b.advance(49 * MS);
        b.expect(Open, &[]);
        b.advance(MS);
        b.expect(HalfOpen, &[Ev::HalfOpen]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_ignores_succeed_and_fail() {
    let b = breaker::long_reset_timeout();
    open(&b, true).await;
    b.cb.succeed();
    b.expect(Open, &[]);
    b.cb.fail();
    b.expect(Open, &[]);
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_report_their_elapsed_time() {
    both(breaker::long_reset_timeout, async |b, sync| {
        let r = through(b, sync, || -> R {
            b.advance(7 * MS);
            Err(TestException)
        });
        assert_eq!(r.await, Err(CbError::Failed(TestException)));
        b.expect(Open, &[Ev::Failure(7 * MS), Ev::Open]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reset_timeout_grows_each_time_the_trial_fails() {
    let b = breaker::non_one_factor();
    let ok = || R::Ok(1);
    open(&b, false).await;
    assert_eq!(through(&b, true, ok).await, refused(1000 * MS));
    b.advance(1000 * MS);
    b.expect(HalfOpen, &[Ev::BreakerOpen, Ev::HalfOpen]);
    fail(&b, false).await;
    assert_eq!(through(&b, true, ok).await, refused(5000 * MS));
    b.advance(4999 * MS);
    assert!(
        b.cb.is_open(),
        "the second open period is five times the first"
    );
    b.advance(MS);
    fail(&b, true).await;
    b.advance(24_999 * MS);
    assert!(b.cb.is_open(), "and the third five times the second");
    b.advance(MS);
    assert_eq!(through(&b, true, ok).await, Ok(1));
    assert!(b.cb.is_closed());
    fail(&b, true).await;
    b.advance(1000 * MS);
    assert!(b.cb.is_half_open(), "closing starts the backoff over");
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_trial_closes() {
    both(breaker::short_reset_timeout, async |b, sync| {
        half_open(b, sync).await;
        let hi = through(b, sync, || {
            b.advance(3 * MS);
            Ok("hi")
        });
        assert_eq!(hi.await, Ok("hi"));
        b.expect(Closed, &[Ev::Success(3 * MS), Ev::Close]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_error_counted_as_success_closes() {
    both(breaker::short_reset_timeout, async |b, sync| {
        half_open(b, sync).await;
        let r = through_with(b, sync, || R::Err(TestException), |_| false).await;
        assert_eq!(r, Err(CbError::Failed(TestException)));
        b.expect(Closed, &[Ev::Success(ZERO), Ev::Close]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_trial_opens_again() {
    both(breaker::short_reset_timeout, async |b, sync| {
        half_open(b, sync).await;
        open(b, sync).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_ok_counted_as_failure_opens_again() {
    both(breaker::short_reset_timeout, async |b, sync| {
        half_open(b, sync).await;
        let r = through_with(b, sync, || Ok(2), even_number_is_failure).await;
        assert_eq!(r, Ok(2), "the value is handed back all the same");
        b.expect(Open, &[Ev::Failure(ZERO), Ev::Open]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn succeed_and_fail_decide_a_half_open_breaker() {
    let b = breaker::short_reset_timeout();
    half_open(&b, true).await;
    b.cb.fail();
    b.expect(Open, &[Ev::Open]);
    b.advance(50 * MS);
    b.expect(HalfOpen, &[Ev::HalfOpen]);
    b.cb.succeed();
    b.expect(Closed, &[Ev::Close]);
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_that_times_out_opens_again() {
    // Sync: the call returns after its timeout.
    let b = breaker::short_call_timeout();
    half_open(&b, true).await;
    let r = through(&b, true, || {
        b.advance(200 * MS);
        R::Ok(1)
    });
    assert_eq!(r.await, timed_out(50 * MS));
    b.expect(Open, &[Ev::Timeout(200 * MS), Ev::Open]);
    b.end().await;

    // Async: the call is still running at its timeout.
    let b = breaker::short_call_timeout();
    half_open(&b, false).await;
    let cb = b.cb.clone();
    let call = tokio::spawn(async move { cb.call(pending::<R>()).await });
    common::eventually("the call's timer", || b.time.pending_timers() == 1);
    b.advance(50 * MS);
    assert_eq!(call.await.unwrap(), timed_out(50 * MS));
    b.expect(Open, &[Ev::Timeout(50 * MS), Ev::Open]);
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_one_trial_at_a_time() {
    let b = breaker::short_reset_timeout();
    half_open(&b, false).await;
    let (done, wait) = tokio::sync::oneshot::channel::<()>();
    let cb = b.cb.clone();
    let trial = tokio::spawn(async move {
        cb.call(async move {
            wait.await.unwrap();
            R::Ok(1)
        })
        .await
    });
    common::eventually("the trial's timer", || b.time.pending_timers() == 1);
    assert_eq!(through(&b, true, not_called).await, refused(ZERO));
    assert_eq!(through(&b, false, not_called).await, refused(ZERO));
    b.expect(HalfOpen, &[Ev::BreakerOpen, Ev::BreakerOpen]);
    done.send(()).unwrap();
    assert_eq!(trial.await.unwrap(), Ok(1));
    b.expect(Closed, &[Ev::Success(ZERO), Ev::Close]);
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_counts_failures_and_opens_at_the_limit() {
    both(breaker::long_call_timeout, async |b, sync| {
        assert_eq!(through(b, true, || R::Ok(1)).await, Ok(1));
        assert_eq!(through(b, false, || R::Ok(1)).await, Ok(1));
        assert_eq!(b.cb.current_failure_count(), 0);
        b.expect(Closed, &[Ev::Success(ZERO); 2]);
        open(b, sync).await;
        assert_eq!(b.cb.current_failure_count(), 1);
    })
    .await;
    // An even number counted as a failure opens the breaker, and is
    // handed back.
    both(breaker::long_call_timeout, async |b, sync| {
        assert_eq!(
            through_with(b, sync, || Ok(2), even_number_is_failure).await,
            Ok(2)
        );
        b.expect(Open, &[Ev::Failure(ZERO), Ev::Open]);
        assert_eq!(b.cb.current_failure_count(), 1);
    })
    .await;
    // So does the fail method.
    let b = breaker::long_call_timeout();
    b.cb.fail();
    b.expect(Open, &[Ev::Open]);
    assert_eq!(b.cb.current_failure_count(), 1);
    b.end().await;
    // Five failures in a row open a breaker of five, not four.
    both(breaker::multi_failure, async |b, sync| {
        for _ in 0..4 {
            fail(b, !sync).await;
        }
        assert!(b.cb.is_closed());
        assert_eq!(b.cb.current_failure_count(), 4);
        fail(b, sync).await;
        assert!(b.cb.is_open());
        assert_eq!(b.cb.current_failure_count(), 5);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_resets_the_failure_count() {
    both(breaker::multi_failure, async |b, sync| {
        fail(b, sync).await;
        assert_eq!(b.cb.current_failure_count(), 1);
        assert_eq!(through(b, sync, || R::Ok(1)).await, Ok(1));
        assert_eq!(b.cb.current_failure_count(), 0);

        for _ in 0..4 {
            fail(b, sync).await;
        }
        assert_eq!(b.cb.current_failure_count(), 4);
        b.cb.succeed();
        assert_eq!(b.cb.current_failure_count(), 0);

        // harmlessExceptionAsSuccess: this error is not a failure.
        for _ in 0..4 {
            fail(b, sync).await;
        }
        let harmless = |r: &R| r.is_err() && *r != Err(TestException);
        let r = through_with(b, sync, || Err(TestException), harmless).await;
        assert_eq!(r, Err(CbError::Failed(TestException)));
        assert_eq!(b.cb.current_failure_count(), 0);
        assert!(b.cb.is_closed());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_call_that_runs_too_long_is_a_timeout() {
    let b = breaker::short_call_timeout();
    let r = through(&b, true, || {
        b.advance(200 * MS);
        R::Ok(1)
    });
    assert_eq!(r.await, timed_out(50 * MS));
    assert_eq!(b.cb.current_failure_count(), 1);
    b.expect(Open, &[Ev::Timeout(200 * MS), Ev::Open]);
    b.end().await;
    // Just under the timeout is a success.
    let b = breaker::short_call_timeout();
    let r = through(&b, true, || {
        b.advance(49 * MS);
        R::Ok(1)
    });
    assert_eq!(r.await, Ok(1));
    b.expect(Closed, &[Ev::Success(49 * MS)]);
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_call_times_out_at_the_call_timeout() {
    let b = breaker::short_call_timeout();
    let (_never, wait) = tokio::sync::oneshot::channel::<()>();
    let cb = b.cb.clone();
    let call = tokio::spawn(async move {
        cb.call(async move {
            let _ = wait.await;
            R::Err(TestException)
        })
        .await
    });
    common::eventually("the call's timer", || b.time.pending_timers() == 1);
    b.advance(49 * MS);
    assert!(b.cb.is_closed());
    b.advance(MS);
    // The timeout, not the call's own error, which never came.
    assert_eq!(call.await.unwrap(), timed_out(50 * MS));
    assert_eq!(b.cb.current_failure_count(), 1);
    b.expect(Open, &[Ev::Timeout(50 * MS), Ev::Open]);
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_report_their_elapsed_time() {
    both(breaker::short_call_timeout, async |b, sync| {
        let took = |ms: u32, r: R| {
            move || {
                b.advance(ms * MS);
                r
            }
        };
        assert_eq!(through(b, sync, took(20, Ok(1))).await, Ok(1));
        assert_eq!(through(b, !sync, took(30, Ok(1))).await, Ok(1));
        b.expect(Closed, &[Ev::Success(20 * MS), Ev::Success(30 * MS)]);
        let failed = through(b, sync, took(10, Err(TestException))).await;
        assert_eq!(failed, Err(CbError::Failed(TestException)));
        b.expect(Open, &[Ev::Failure(10 * MS), Ev::Open]);
    })
    .await;
}
