//! Pekko's `CircuitBreakerMTSpec` (actor-tests,
//! `org/apache/pekko/pattern/CircuitBreakerMTSpec.scala`): one breaker
//! called by many tasks at once, and by many threads at once through
//! `with_sync_call`. The spec's breaker (5 failures, 2 s call timeout, 3 s
//! reset) runs on a manual clock, so the reset needs no waiting.
//!
//! Ported: "allow many calls while in closed state with no errors"
//! (`many_calls_go_through_a_closed_breaker`); "transition to open state
//! upon reaching failure limit and fail-fast"
//! (`an_open_breaker_refuses_every_call`); "allow a single call through in
//! half-open state" (`half_open_lets_exactly_one_call_through`, stronger
//! than the spec's: every other call starts while the trial is under way,
//! so exactly one gets through); "recover and reset the breaker after the
//! reset timeout" (`a_successful_trial_lets_everyone_through_again`).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::breaker::Breaker;
use volley::{CircuitBreaker, CircuitBreakerError, CircuitBreakerSettings};

const CALLS: usize = 100;
const THREADS: usize = 8;

fn breaker() -> Breaker {
    let settings = CircuitBreakerSettings::new(5, Duration::from_secs(2), Duration::from_secs(3));
    Breaker::new("mt", settings)
}

/// The spec's `openBreaker`: failing calls until the breaker refuses one.
async fn open(b: &Breaker) {
    for _ in 0..5 {
        let _ = b.cb.call(async { Err::<(), _>("FAIL") }).await;
    }
    let refused = b.cb.call(async { Ok::<(), &str>(()) }).await;
    assert!(matches!(refused, Err(CircuitBreakerError::Open { .. })));
}

/// `CALLS` calls at once, each on a task of its own, each waiting (once
/// through the breaker) until `gate` opens; the gate opens once `waiting`
/// calls are inside or refused. What each call ended with.
async fn calls_at_once(cb: &CircuitBreaker, waiting: usize) -> Vec<&'static str> {
    let (open_gate, gate) = tokio::sync::watch::channel(false);
    let arrived = Arc::new(AtomicUsize::new(0));
    let arrive = {
        let arrived = arrived.clone();
        move || {
            if arrived.fetch_add(1, Ordering::SeqCst) + 1 == waiting {
                open_gate.send_replace(true);
            }
        }
    };
    let arrive = Arc::new(arrive);
    let tasks: Vec<_> = (0..CALLS)
        .map(|_| {
            let (cb, mut gate, arrive) = (cb.clone(), gate.clone(), arrive.clone());
            tokio::spawn(async move {
                let a = arrive.clone();
                let r = cb
                    .call(async move {
                        a();
                        gate.wait_for(|open| *open).await.map(|_| "succeed")
                    })
                    .await;
                match r {
                    Ok(s) => s,
                    Err(CircuitBreakerError::Open { .. }) => {
                        arrive();
                        "CBO"
                    }
                    Err(e) => panic!("unexpected {e:?}"),
                }
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    results
}

fn count(results: &[&str], what: &str) -> usize {
    results.iter().filter(|r| **r == what).count()
}

/// `THREADS` threads racing `with_sync_call`; the ones let through wait
/// inside the call until the others have been let through or refused.
fn threads_at_once(cb: &CircuitBreaker) -> Vec<&'static str> {
    let start = Arc::new(std::sync::Barrier::new(THREADS));
    let arrived = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (cb, start, arrived) = (cb.clone(), start.clone(), arrived.clone());
            std::thread::spawn(move || {
                start.wait();
                let r = cb.with_sync_call(|| {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    common::eventually("every thread to arrive", || {
                        arrived.load(Ordering::SeqCst) == THREADS
                    });
                    Ok::<_, ()>("succeed")
                });
                match r {
                    Ok(s) => s,
                    Err(CircuitBreakerError::Open { .. }) => {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        "CBO"
                    }
                    Err(e) => panic!("unexpected {e:?}"),
                }
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_calls_go_through_a_closed_breaker() {
    let b = breaker();
    let results = calls_at_once(&b.cb, 5).await;
    assert_eq!(count(&results, "succeed"), CALLS);
    let results = threads_at_once(&b.cb);
    assert_eq!(count(&results, "succeed"), THREADS);
    assert!(b.cb.is_closed());
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_open_breaker_refuses_every_call() {
    let b = breaker();
    open(&b).await;
    let results = calls_at_once(&b.cb, CALLS).await;
    assert_eq!(count(&results, "CBO"), CALLS);
    let results = threads_at_once(&b.cb);
    assert_eq!(count(&results, "CBO"), THREADS);
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn half_open_lets_exactly_one_call_through() {
    let b = breaker();
    open(&b).await;
    b.advance(Duration::from_secs(3));
    assert!(b.cb.is_half_open());
    let results = calls_at_once(&b.cb, CALLS).await;
    assert_eq!(count(&results, "succeed"), 1, "{results:?}");
    assert_eq!(count(&results, "CBO"), CALLS - 1);
    assert!(b.cb.is_closed(), "the trial succeeded");

    open(&b).await;
    b.advance(Duration::from_secs(3));
    let results = threads_at_once(&b.cb);
    assert_eq!(count(&results, "succeed"), 1, "{results:?}");
    assert!(b.cb.is_closed());
    b.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_successful_trial_lets_everyone_through_again() {
    let b = breaker();
    open(&b).await;
    b.advance(Duration::from_secs(3));
    assert_eq!(
        b.cb.call(async { Ok::<_, ()>("succeed") }).await,
        Ok("succeed")
    );
    assert!(b.cb.is_closed());
    let results = calls_at_once(&b.cb, 5).await;
    assert_eq!(count(&results, "succeed"), CALLS);
    b.end().await;
}
