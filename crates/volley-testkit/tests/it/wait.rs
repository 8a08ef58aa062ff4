//! `eventually` and `eventually_async`: async waits for a condition, with
//! a deadline.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley_testkit::{eventually, eventually_async, eventually_async_within, eventually_within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_while_the_runtime_goes_on_until_the_condition_holds() {
    let flag = Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    // Set by another task, which runs only if the wait yields.
    tokio::spawn(async move {
        tokio::task::yield_now().await;
        set.store(true, Ordering::SeqCst);
    });
    eventually("the flag to be set", || flag.load(Ordering::SeqCst)).await;
}

#[tokio::test(flavor = "current_thread")]
async fn yields_to_tasks_on_a_single_threaded_runtime() {
    let flag = Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    tokio::spawn(async move { set.store(true, Ordering::SeqCst) });
    eventually("the flag to be set", || flag.load(Ordering::SeqCst)).await;
}

#[tokio::test(flavor = "current_thread")]
#[should_panic(expected = "timed out after 50ms waiting for what never happens")]
async fn fails_naming_the_condition_at_its_deadline() {
    eventually_within(Duration::from_millis(50), "what never happens", || false).await;
}

/// A condition that returns `Some` ends the wait with its value.
#[tokio::test(flavor = "current_thread")]
async fn an_option_condition_returns_its_value() {
    let tries = AtomicUsize::new(0);
    let third = eventually("the third try", || {
        let n = tries.fetch_add(1, Ordering::SeqCst) + 1;
        (n == 3).then_some(n)
    })
    .await;
    assert_eq!(third, 3);
}

/// An async condition is awaited on each try (here it waits for another
/// task to have counted to 3) and its value returned.
#[tokio::test(flavor = "current_thread")]
async fn an_async_condition_is_awaited_until_it_holds() {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    tokio::spawn(async move {
        for _ in 0..3 {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
        }
    });
    let tries = AtomicUsize::new(0);
    let seen = eventually_async("the count to reach 3", async || {
        tries.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        let n = count.load(Ordering::SeqCst);
        (n >= 3).then_some(n)
    })
    .await;
    assert_eq!(seen, 3);
    assert!(tries.load(Ordering::SeqCst) >= 1);
}

/// A try that never finishes is dropped at the deadline: the wait fails
/// naming what it waited for instead of hanging.
#[tokio::test(flavor = "current_thread")]
#[should_panic(expected = "timed out after 50ms waiting for an answer that never comes")]
async fn an_async_condition_stuck_in_a_try_fails_at_the_deadline() {
    eventually_async_within(
        Duration::from_millis(50),
        "an answer that never comes",
        async || std::future::pending::<bool>().await,
    )
    .await;
}
