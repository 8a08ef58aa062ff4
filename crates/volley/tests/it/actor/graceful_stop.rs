//! Waiting for an actor's end from async code: `ActorRef::terminated`,
//! `AnyRef::terminated` and `graceful_stop_and_wait`, with the cases of
//! Pekko's `PatternSpec` for `gracefulStop` ("provide Future for stopping
//! an actor", "complete Future when actor already terminated", "complete
//! Future with AskTimeoutException when actor not terminated within
//! timeout") and what a waiting future adds: queued messages first, a
//! dropped wait stops its watcher, waits during shutdown resolve.

use crate::common;

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use common::pekko::{with_blocking_pool, BLOCKING, T};
use volley::{ActorRef, ActorSystem, LifecycleEvent, LifecycleKind, StopError};
use volley_testkit::{actor_fn, actor_fn_with, TestProbe};

enum Msg {
    Block(mpsc::Receiver<()>),
}

/// Reports its `post_stop`; `Block` holds its handler until the test
/// lets go. On the blocking pool, so that a blocked handler holds none of
/// the default dispatcher's threads.
fn reporter(system: &volley::ActorSystem, probe: &TestProbe<String>) -> ActorRef<Msg> {
    let props = actor_fn_with(probe.actor_ref(), |report, _ctx, Msg::Block(release)| {
        report.tell("blocked".into());
        let _ = release.recv_timeout(T);
        Ok(())
    })
    .on_stop(|report, _ctx| report.tell("post_stop".into()))
    .props();
    system
        .spawn_anonymous(props.with_dispatcher(BLOCKING))
        .unwrap()
}

fn system(name: &str) -> volley::ActorSystem {
    common::system_with(name, with_blocking_pool(volley::Settings::default())).unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_stop_and_wait_resolves_after_queued_messages_and_post_stop() {
    let system = system("graceful-stop");
    let log = Arc::new(Mutex::new(Vec::new()));
    // Writes what it handles, and its `post_stop`, straight into a shared
    // log (a probe's messages would arrive through the probe's own actor,
    // later than the wait can resolve).
    let logger = actor_fn_with(log.clone(), |log, _ctx, msg| {
        log.lock().unwrap().push(msg);
        Ok(())
    })
    .on_stop(|log, _ctx| log.lock().unwrap().push("post_stop"));
    let actor = system.spawn_anonymous(logger.props()).unwrap();
    actor.tell("first");
    actor.tell("second");
    actor.graceful_stop_and_wait(T).await.unwrap();
    // Everything happened before the future resolved.
    assert!(actor.is_terminated());
    assert_eq!(*log.lock().unwrap(), ["first", "second", "post_stop"]);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_that_has_already_terminated_resolves_at_once() {
    let system = system("graceful-stop-dead");
    let probe = TestProbe::<String>::new(&system);
    let actor = reporter(&system, &probe);
    system.stop(&actor);
    probe.expect_msg("post_stop".into());
    common::eventually("the actor's end", || actor.is_terminated());
    tokio::time::timeout(T, actor.graceful_stop_and_wait(Duration::from_millis(1)))
        .await
        .expect("resolves")
        .unwrap();
    tokio::time::timeout(T, actor.to_any().terminated())
        .await
        .expect("resolves")
        .unwrap();
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_that_takes_longer_than_the_timeout_fails_and_still_happens() {
    let system = system("graceful-stop-timeout");
    let probe = TestProbe::<String>::new(&system);
    let actor = reporter(&system, &probe);
    let (release, blocked) = mpsc::channel();
    actor.tell(Msg::Block(blocked));
    probe.expect_msg("blocked".into());
    let outcome = actor
        .graceful_stop_and_wait(Duration::from_millis(100))
        .await;
    assert_eq!(
        outcome,
        Err(StopError::Timeout {
            target: actor.path().to_string(),
            after: Duration::from_millis(100),
        })
    );
    assert!(!actor.is_terminated());
    // The stop stays queued: once the handler returns, the actor stops.
    release.send(()).unwrap();
    tokio::time::timeout(T, actor.terminated())
        .await
        .expect("the queued stop ends the actor")
        .unwrap();
    probe.expect_msg("post_stop".into());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_resolves_when_someone_else_stops_the_actor() {
    let system = system("terminated-wait");
    let probe = TestProbe::<String>::new(&system);
    let actor = reporter(&system, &probe);
    let any = actor.to_any();
    let waiting = tokio::spawn(async move { any.terminated().await });
    // A window for a wrong resolution to show (what is checked).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "resolved before the actor stopped");
    system.stop(&actor);
    tokio::time::timeout(T, waiting)
        .await
        .expect("resolves")
        .unwrap()
        .unwrap();
    probe.expect_msg("post_stop".into());
    system.terminate().await;
}

/// A probe told of the lifecycle of the actors under `/system` (the
/// watchers behind the waits).
fn system_events(system: &ActorSystem) -> TestProbe<String> {
    let events = TestProbe::<String>::new(system);
    let to = events.actor_ref();
    let listener = actor_fn(move |_ctx, e: LifecycleEvent| {
        if e.actor.contains("/system/") {
            let kind = match e.kind {
                LifecycleKind::Started => "started",
                LifecycleKind::Stopped => "stopped",
                LifecycleKind::Restarted => "restarted",
            };
            to.tell(kind.to_string());
        }
        Ok(())
    });
    let listener = system.spawn_anonymous(listener).unwrap();
    assert!(system.event_stream().subscribe(listener));
    events
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_wait_stops_its_watcher_and_a_finished_one_leaves_none() {
    let system = system("terminated-dropped");
    let events = system_events(&system);
    let probe = TestProbe::<String>::new(&system);
    let actor = reporter(&system, &probe);

    // Given up before the actor ends: the watcher stops anyway.
    let gave_up = tokio::time::timeout(Duration::from_millis(50), actor.terminated()).await;
    assert!(gave_up.is_err(), "the actor is alive: the wait cannot end");
    events.expect_msg("started".into());
    events.expect_msg("stopped".into());

    // Answered: the watcher stops after answering.
    let any = actor.to_any();
    let waiting = tokio::spawn(async move { any.terminated().await });
    events.expect_msg("started".into());
    system.stop(&actor);
    waiting.await.unwrap().unwrap();
    events.expect_msg("stopped".into());
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_resolve_when_the_system_terminates() {
    let system = system("terminated-shutdown");
    let events = system_events(&system);
    let probe = TestProbe::<String>::new(&system);
    let actor = reporter(&system, &probe);
    let any = actor.to_any();
    let waiting = tokio::spawn(async move { any.terminated().await });
    // The wait has begun once its watcher has started.
    events.expect_msg("started".into());
    system.terminate().await;
    // The actor stops with its system (before `/system`'s watchers do), so
    // its end is seen; either way the wait does not hang.
    let outcome = tokio::time::timeout(T, waiting).await.expect("resolves");
    assert!(matches!(
        outcome.unwrap(),
        Ok(()) | Err(StopError::SystemTerminated(_))
    ));
    // After shutdown nothing can watch; a live-looking ref is reported as
    // such, a dead one as ended.
    assert_eq!(actor.terminated().await, Ok(()));
}
