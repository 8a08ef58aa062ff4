//! The deadlines of waiting asks, which the system's sweeper keeps instead
//! of a timer per ask: unanswered asks time out, never before their
//! timeout; answered ones are not disturbed by the sweeps around them; an
//! ask still waiting when its system terminates ends with
//! `SystemTerminated`.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use volley::{ActorRef, ActorSystem, AskError, ReplyTo};
use volley_testkit::{actor_fn_with, eventually};

/// The handles the actor keeps.
type Kept = Arc<Mutex<Vec<ReplyTo<u64>>>>;

/// Answers odd numbers at once; keeps the handles of even ones, and hands
/// them to the test when it has a place for them (`out`).
fn spawn_odd_only(system: &ActorSystem, out: Option<Kept>) -> ActorRef<(u64, ReplyTo<u64>)> {
    let kept = Vec::<ReplyTo<u64>>::new();
    let odd_only = actor_fn_with(
        kept,
        move |kept, _ctx, (n, reply_to): (u64, ReplyTo<u64>)| {
            if n % 2 == 1 {
                reply_to.tell(n);
            } else {
                if let Some(out) = &out {
                    out.lock().unwrap().push(reply_to.clone());
                }
                kept.push(reply_to);
            }
            Ok(())
        },
    );
    system.spawn_anonymous(odd_only.props()).unwrap()
}

fn odd_only(system: &ActorSystem) -> ActorRef<(u64, ReplyTo<u64>)> {
    spawn_odd_only(system, None)
}

/// An odd-only actor that hands the handles it keeps to the test.
fn odd_only_handing_out(system: &ActorSystem) -> (ActorRef<(u64, ReplyTo<u64>)>, Kept) {
    let out = Kept::default();
    (spawn_odd_only(system, Some(out.clone())), out)
}

/// 400 tasks ask, the even ones with timeouts spread over 20–220 ms; the
/// odd ones are answered, the even ones time out, none of them before its
/// timeout, whichever sweep finds it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_asks_time_out_and_never_early_while_answered_ones_complete() {
    let system = common::system("deadlines-many").unwrap();
    let actor = odd_only(&system);
    let tasks: Vec<_> = (0..400u64)
        .map(|n| {
            let actor = actor.clone();
            tokio::spawn(async move {
                let spread = Duration::from_millis(20 + (n * 37) % 200);
                // The unanswered time out within the spread; the answered
                // get room for a loaded machine, whose actor may answer
                // later than 20 ms (the sweeps run around them all the same).
                let timeout = if n % 2 == 1 {
                    spread + Duration::from_secs(10)
                } else {
                    spread
                };
                let started = Instant::now();
                let answer = actor.ask(|r| (n, r), timeout).await;
                (n, timeout, started.elapsed(), answer)
            })
        })
        .collect();
    for task in tasks {
        let (n, timeout, took, answer) = task.await.unwrap();
        if n % 2 == 1 {
            assert_eq!(answer, Ok(n));
            continue;
        }
        match answer {
            Err(AskError::Timeout { after, .. }) => assert_eq!(after, timeout),
            other => panic!("ask {n}: {other:?}"),
        }
        assert!(
            took >= timeout,
            "ask {n} timed out after {took:?} < {timeout:?}"
        );
        // Generous: a loaded machine delays the sweeper, never this much.
        assert!(
            took < timeout + Duration::from_secs(10),
            "ask {n}: {took:?}"
        );
    }
    system.terminate().await;
}

/// A reply that races the sweep of its deadline still wins or the ask
/// times out; it is never lost: every ask ends one way or the other, and a
/// reply after the timeout is a dead letter.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_reply_after_the_timeout_is_a_dead_letter() {
    let system = common::system("deadlines-late").unwrap();
    let (actor, out) = odd_only_handing_out(&system);
    let answer = actor.ask(|r| (2, r), Duration::from_millis(30)).await;
    assert!(
        matches!(answer, Err(AskError::Timeout { .. })),
        "{answer:?}"
    );
    // On a loaded machine the ask can time out before the actor has
    // even taken the request: wait for the handle it keeps.
    let handle = eventually("the actor to keep the reply handle", || {
        out.lock().unwrap().pop()
    })
    .await;
    assert!(handle.is_terminated());
    let before = system.dead_letter_count();
    handle.tell(99);
    assert_eq!(system.dead_letter_count(), before + 1);
    system.terminate().await;
}

/// The reply handle outlives the system (the test holds it): the ask does
/// not wait out its 60 s timeout, it ends with `SystemTerminated` when the
/// system terminates.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_waiting_when_its_system_terminates_ends_with_system_terminated() {
    let system = common::system("deadlines-end").unwrap();
    let (actor, out) = odd_only_handing_out(&system);
    let waiting = tokio::spawn({
        let actor = actor.clone();
        async move { actor.ask(|r| (4, r), Duration::from_secs(60)).await }
    });
    let handle = eventually("the actor to hand out the reply handle", || {
        out.lock().unwrap().first().cloned()
    })
    .await;
    system.terminate().await;
    let answer = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the ask ended with its system")
        .unwrap();
    assert_eq!(answer, Err(AskError::SystemTerminated));
    drop(handle);
}

/// `Duration::MAX` as a timeout: the ask waits as long as it takes (no
/// overflow computing its deadline), here for a reply that comes late.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_with_an_unbounded_timeout_gets_its_late_reply() {
    let system = common::system("deadlines-max").unwrap();
    let (actor, out) = odd_only_handing_out(&system);
    let waiting = tokio::spawn({
        let actor = actor.clone();
        async move { actor.ask(|r| (6, r), Duration::MAX).await }
    });
    let handle = eventually("the actor to hand out the reply handle", || {
        out.lock().unwrap().pop()
    })
    .await;
    // The reply comes late (the scenario), not a synchronisation.
    tokio::time::sleep(Duration::from_millis(20)).await;
    handle.tell(66);
    assert_eq!(waiting.await.unwrap(), Ok(66));
    system.terminate().await;
}
