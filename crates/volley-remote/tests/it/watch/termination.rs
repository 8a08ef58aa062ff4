//! Waiting for a remote actor's end from async code (`terminated`,
//! `graceful_stop_and_wait`): the wait is a remote death watch, so it
//! resolves when the actor stops, when it was never there, and when its
//! node goes silent and is given up.

use crate::common;

use common::{add, await_incoming_watches, node, quick_detector, remote_ref, spawn_calculator, T};

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_a_remote_actor_resolves_when_it_stops() {
    let a = node("end-a", quick_detector()).await;
    let b = node("end-b", quick_detector()).await;
    let calc = spawn_calculator(&b, "calc");
    let remote = remote_ref(&a, &b, "calc");
    assert_eq!(add(&remote, 1, 2).await, 3);
    let waiting = {
        let remote = remote.clone();
        tokio::spawn(async move { remote.terminated().await })
    };
    // The wait is a watch: once b has it, the wait has begun.
    await_incoming_watches(&b, &a, 1);
    assert!(!waiting.is_finished(), "resolved while the actor lives");
    calc.graceful_stop();
    tokio::time::timeout(T, waiting)
        .await
        .expect("resolves once the actor stopped")
        .unwrap()
        .unwrap();
    assert!(!remote.is_terminated(), "a path is whatever lives there");
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_graceful_stop_and_wait_stops_the_actor_there() {
    let a = node("end-a", quick_detector()).await;
    let b = node("end-b", quick_detector()).await;
    let calc = spawn_calculator(&b, "calc");
    let remote = remote_ref(&a, &b, "calc");
    assert_eq!(add(&remote, 2, 2).await, 4);
    remote.graceful_stop_and_wait(T).await.unwrap();
    common::eventually("the actor on b to end", || calc.is_terminated()).await;
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_an_actor_that_is_not_there_resolves() {
    let a = node("end-a", quick_detector()).await;
    let b = node("end-b", quick_detector()).await;
    let missing = remote_ref(&a, &b, "nobody");
    tokio::time::timeout(T, missing.terminated())
        .await
        .expect("resolves: nothing lives there")
        .unwrap();
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_resolves_when_the_node_goes_silent() {
    let a = node("end-a", quick_detector()).await;
    let b = node("end-b", quick_detector()).await;
    spawn_calculator(&b, "calc");
    let remote = remote_ref(&a, &b, "calc");
    assert_eq!(add(&remote, 1, 1).await, 2);
    let waiting = {
        let remote = remote.clone();
        tokio::spawn(async move { remote.terminated().await })
    };
    await_incoming_watches(&b, &a, 1);
    // Silence without a goodbye: remoting stops, b's actors live on.
    b.remoting.shutdown();
    tokio::time::timeout(T, waiting)
        .await
        .expect("resolves once the failure detector gives b up")
        .unwrap()
        .unwrap();
    a.system.terminate().await;
    b.system.terminate().await;
}
