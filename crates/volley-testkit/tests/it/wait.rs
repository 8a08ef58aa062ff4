//! `eventually`: an async wait for a condition, with a deadline.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley_testkit::{eventually, eventually_within};

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
