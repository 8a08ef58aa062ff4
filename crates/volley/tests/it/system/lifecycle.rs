//! Cases ported from Pekko's actor-system specs, on the system's lifecycle:
//! the classic `ActorSystemSpec` (actor-tests) and the typed internal
//! `ActorSystemSpec` (actor-typed-tests, typed.internal). Ported: "return
//! isTerminated status correctly", "throw RejectedExecutionException or
//! run termination callback when shutting down", "reliable deny creation
//! of actors while shutting down", typed "terminate the guardian actor"
//! (with a top-level actor: volley has no user-given guardian), "be able
//! to terminate immediately", "have a name", "be able to run Futures", and
//! terminating twice and from several callers at once.
//!
//! Covered elsewhere: "run termination callbacks in order" is
//! `shutdown_hooks.rs` (volley runs hooks in the order they were added;
//! Pekko runs `registerOnTermination` callbacks in reverse), "awaitTermination
//! after termination callbacks" is `when_terminated_waits_for_the_hooks`
//! there, "throw RejectedExecutionException when shutdown" is
//! `adding_a_hook_once_termination_began_is_an_error` there, and the actors
//! stopping on terminate is `lifecycle.rs`.
//!
//! Not ported: the system-name cases (with the path rules), "find actors
//! that just have been created" (lookup), "reliably create waves of
//! actors" (a load run), the log lines of "log dead letters" (volley logs
//! them at debug level, rate-limited), the guardian cases ("shut down when
//! /user fails", "... escalates", "allow configuration of guardian
//! supervisor strategy", custom guardian, typed "start the guardian actor
//! and terminate when it terminates", "shutdown if guardian shuts down
//! immediately": the `/user` guardian is the runtime's, escalation to it
//! restarts the top-level actor, and a system ends only by `terminate`),
//! `close`/`Using` (no `close`; terminating is async), uptime, thread
//! factory, null messages, address, guardian mailbox and the settings'
//! `toString`.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley::{ActorRef, ActorSystem, Props, ShutdownReason, SpawnError};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

/// A bound on each wait, so a hang fails instead of stalling the suite.
const LIMIT: Duration = Duration::from_secs(30);

async fn within_limit<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

/// Does nothing.
fn idle() -> Props<FnActor<()>> {
    actor_fn(|_, ()| Ok(()))
}

/// Reports its start and its stop.
fn reporter(to: ActorRef<String>) -> Props<FnActor<(), ActorRef<String>>> {
    actor_fn_with(to, |_, _ctx, ()| Ok(()))
        .on_start(|to, _ctx| {
            to.tell("started".into());
            Ok(())
        })
        .on_stop(|to, _ctx| to.tell("done".into()))
        .props()
}

/// Starts `terminate` on the system's own runtime, without waiting.
fn terminate_in_background(system: &ActorSystem) {
    let s = system.clone();
    system
        .runtime_handle()
        .spawn(async move { s.terminate().await });
}

/// "return isTerminated status correctly".
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn is_terminated_and_when_terminated_follow_the_termination() {
    let system = common::system("as-status").unwrap();
    let waiter = {
        let system = system.clone();
        tokio::spawn(async move { system.when_terminated().await })
    };
    tokio::task::yield_now().await;
    assert!(!system.is_terminated());
    assert!(!waiter.is_finished());

    within_limit("terminate", system.terminate()).await;
    assert!(system.is_terminated());
    within_limit("the waiter", waiter).await.unwrap();
    within_limit("when_terminated", system.when_terminated()).await;
}

/// "throw RejectedExecutionException or run termination callback when
/// shutting down": hooks added while termination is under way are each
/// either refused or run, exactly once. The test adds hooks until one is
/// refused, so some meet termination just before that point.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_hook_added_while_terminating_runs_once_or_is_refused() {
    for round in 0..3 {
        let system = common::system(&format!("as-hook-race-{round}")).unwrap();
        terminate_in_background(&system);
        let mut accepted = Vec::new();
        let refused = loop {
            let count = Arc::new(AtomicUsize::new(0));
            let ran = count.clone();
            let added = system.add_shutdown_hook("late", move || async move {
                ran.fetch_add(1, Ordering::SeqCst);
            });
            match added {
                Ok(()) => accepted.push(count),
                Err(_) => break count,
            }
            if accepted.len() % 10 == 0 {
                tokio::task::yield_now().await;
            }
        };
        within_limit("termination", system.when_terminated()).await;
        for (i, count) in accepted.iter().enumerate() {
            assert_eq!(count.load(Ordering::SeqCst), 1, "round {round}, hook {i}");
        }
        assert_eq!(refused.load(Ordering::SeqCst), 0, "round {round}");
    }
}

/// "reliable deny creation of actors while shutting down": spawning goes
/// on while the system terminates; once refused it stays refused, and
/// every actor that was created has stopped when the system has.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn spawning_while_shutting_down_is_refused_for_good_and_all_created_actors_stop() {
    let system = common::system("as-deny").unwrap();
    let mut created = Vec::new();
    let mut refused = false;
    let mut attempts = 0u32;
    while !system.is_terminated() {
        attempts += 1;
        assert!(
            attempts < 1_000_000,
            "the system did not terminate; {} created",
            created.len()
        );
        if attempts == 200 {
            terminate_in_background(&system);
        }
        match system.spawn_anonymous(idle()) {
            Ok(actor) => {
                assert!(!refused, "a spawn succeeded after one was refused");
                created.push(actor);
            }
            Err(e) => {
                assert!(matches!(e, SpawnError::ParentTerminating { .. }), "{e:?}");
                refused = true;
            }
        }
        if attempts % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }
    assert!(created.len() >= 199);
    within_limit("termination", system.when_terminated()).await;
    let alive: Vec<_> = created.iter().filter(|a| !a.is_terminated()).collect();
    assert!(
        alive.is_empty(),
        "{} actors outlived the system",
        alive.len()
    );
    assert!(matches!(
        system.spawn_anonymous(idle()),
        Err(SpawnError::ParentTerminating { .. })
    ));
}

/// Typed "terminate the guardian actor": a started top-level actor gets its
/// `post_stop`, and the shutdown's reason is `Terminate`.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn terminate_stops_a_started_top_level_actor_with_the_terminate_reason() {
    let system = common::system("as-terminate").unwrap();
    // The probe lives in another system, to hear the post_stop.
    let probes = common::system("as-terminate-probes").unwrap();
    let events = TestProbe::<String>::new(&probes);
    let to = events.actor_ref();
    system.spawn("guardian", reporter(to)).unwrap();
    events.expect_msg("started".to_string());
    assert_eq!(system.coordinated_shutdown().reason(), None);

    within_limit("terminate", system.terminate()).await;
    assert_eq!(
        system.coordinated_shutdown().reason(),
        Some(ShutdownReason::Terminate)
    );
    events.expect_msg("done".to_string());
    events.expect_no_msg(Duration::from_millis(100));
    probes.terminate().await;
}

/// Typed "be able to terminate immediately": right after the system and
/// an actor were created, perhaps before the actor started.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_system_can_terminate_right_after_it_starts() {
    for round in 0..5 {
        let system = common::system(&format!("as-immediately-{round}")).unwrap();
        let actor = system.spawn("first", idle()).unwrap();
        actor.tell(());
        within_limit("terminate", system.terminate()).await;
        assert!(system.is_terminated());
        assert!(actor.is_terminated());
    }
}

/// Terminating twice, and from several callers at once: every caller
/// resolves, the hooks run once, and a later terminate resolves at once.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn terminating_twice_and_concurrently_resolves_every_caller_and_runs_hooks_once() {
    let system = common::system("as-twice").unwrap();
    let hooks = Arc::new(AtomicUsize::new(0));
    let ran = hooks.clone();
    system
        .add_shutdown_hook("count", move || async move {
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    system.spawn("a", idle()).unwrap();

    within_limit("three terminates and a waiter", async {
        tokio::join!(
            system.terminate(),
            system.terminate(),
            system.when_terminated(),
            system.terminate(),
        )
    })
    .await;
    assert!(system.is_terminated());
    within_limit("a terminate after the end", system.terminate()).await;
    within_limit("when_terminated after the end", system.when_terminated()).await;
    assert_eq!(hooks.load(Ordering::SeqCst), 1);
    assert_eq!(
        system.coordinated_shutdown().reason(),
        Some(ShutdownReason::Terminate)
    );
}

/// Typed "have a name".
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_system_has_the_name_it_was_given() {
    let system = common::system("as-name").unwrap();
    assert_eq!(system.name(), "as-name");
    let actor = system.spawn("a", idle()).unwrap();
    assert_eq!(actor.path().to_string(), "volley://as-name/user/a");
    system.terminate().await;
}

/// Typed "be able to run Futures": the system's runtime runs them.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_system_runtime_runs_futures() {
    let system = common::system("as-futures").unwrap();
    let handle = system.runtime_handle();
    let answer = within_limit("the future", handle.spawn(async { 40 + 2 })).await;
    assert_eq!(answer.unwrap(), 42);
    system.terminate().await;
}
