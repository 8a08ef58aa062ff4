//! Coordinated shutdown: phases run in order before the actors stop, tasks
//! of a phase concurrently, failures and timeouts do not stop later phases,
//! and running it twice joins the first run. Cases ported from Pekko's
//! `CoordinatedShutdownSpec` name their case.

use crate::common;

use common::Log;

use std::time::Duration;

use common::quiet_deliberate_panics;
use volley::{ActorSystem, AddTaskError, PhaseFinished, Settings, ShutdownReason, ShutdownStarted};
use volley_testkit::{actor_fn, eventually};

fn system(name: &str, phase_timeout_ms: u64) -> ActorSystem {
    let settings = Settings {
        shutdown_phase_timeout: Duration::from_millis(phase_timeout_ms),
        ..Settings::default()
    };
    common::system_with(name, settings).unwrap()
}

fn add(system: &ActorSystem, phase: &str, name: &'static str, log: &Log) {
    let log = log.clone();
    system
        .coordinated_shutdown()
        .add_task(phase, name, move || async move { log.push(name) })
        .unwrap();
}

async fn terminate(system: &ActorSystem) {
    tokio::time::timeout(Duration::from_secs(30), system.terminate())
        .await
        .expect("terminate() did not complete");
}

fn spawn_stopper(system: &ActorSystem, log: &Log) {
    system.spawn("stopper", log.stopper()).unwrap();
}

/// Subscribes an actor that pushes every `E` it gets to the log,
/// formatted.
fn listen<E: std::fmt::Debug + Clone + Send + 'static>(system: &ActorSystem, log: &Log) {
    let log = log.clone();
    let listener = actor_fn(move |_ctx, msg: E| {
        log.push(format!("{msg:?}"));
        Ok(())
    });
    let listener = system.spawn_anonymous(listener).unwrap();
    system.event_stream().subscribe(listener);
}

/// CoordinatedShutdownSpec "run ordered phases": tasks run phase by phase,
/// and before the actors stop.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn runs_phases_in_order_before_the_actors_stop() {
    let system = system("ordered", 5_000);
    let log = Log::default();
    spawn_stopper(&system, &log);
    add(&system, "before-actor-system-terminate", "c", &log);
    add(&system, "service-unbind", "a", &log);
    add(&system, "service-requests-done", "b", &log);
    terminate(&system).await;
    assert_eq!(log.events(), ["a", "b", "c", "post_stop"]);
}

/// CoordinatedShutdownSpec "only run once": a second run joins the first;
/// every task runs once and the first reason stays.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn runs_once_and_keeps_the_first_reason() {
    let system = system("once", 5_000);
    let log = Log::default();
    add(&system, "service-stop", "a", &log);
    let cs = system.coordinated_shutdown();
    let user = ShutdownReason::User("upgrade".into());
    tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(cs.run(user.clone()), system.terminate());
    })
    .await
    .unwrap();
    cs.run(ShutdownReason::Terminate).await;
    assert_eq!(log.events(), ["a"]);
    assert_eq!(cs.reason(), Some(user));
    assert!(system.is_terminated());
}

/// CoordinatedShutdownSpec "continue after timeout or failure" (with
/// `recover = true`): a panicking and a stuck task are reported, later
/// phases still run.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_failed_or_stuck_task_does_not_stop_later_phases() {
    quiet_deliberate_panics();
    let system = system("recover", 200);
    let log = Log::default();
    listen::<PhaseFinished>(&system, &log);
    let cs = system.coordinated_shutdown();
    cs.add_task("service-unbind", "panics", || async {
        panic!("deliberate panic in a shutdown task")
    })
    .unwrap();
    cs.add_task("service-unbind", "stuck", std::future::pending::<()>)
        .unwrap();
    add(&system, "service-unbind", "fine", &log);
    add(&system, "service-stop", "later", &log);
    terminate(&system).await;
    let events = log.events();
    assert!(events.contains(&"fine".to_string()), "{events:?}");
    assert!(events.contains(&"later".to_string()), "{events:?}");
    let unbind = events
        .iter()
        .find(|e| e.contains("\"service-unbind\""))
        .expect("service-unbind reported");
    assert!(
        unbind.contains("\"panics\"") && unbind.contains("\"stuck\""),
        "{unbind}"
    );
    assert!(!unbind.contains("\"fine\""), "{unbind}");
}

/// CoordinatedShutdownSpec "be possible to add tasks in later phase from
/// task in earlier phase"; and a phase that has run refuses new tasks.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_task_can_add_to_a_later_phase_but_not_an_earlier_one() {
    let system = system("later", 5_000);
    let log = Log::default();
    let (sys, log2) = (system.clone(), log.clone());
    system
        .coordinated_shutdown()
        .add_task("service-stop", "adder", move || async move {
            add(&sys, "before-actor-system-terminate", "added", &log2);
            let late = sys
                .coordinated_shutdown()
                .add_task("service-unbind", "late", || async {});
            assert!(matches!(late, Err(AddTaskError::PhaseStarted { .. })));
            log2.push("adder");
        })
        .unwrap();
    terminate(&system).await;
    assert_eq!(log.events(), ["adder", "added"]);
}

/// CoordinatedShutdownSpec "throw exception when adding task to unknown
/// phase" (here an error, not a panic).
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_unknown_phase_is_an_error() {
    let system = system("unknown", 5_000);
    let e = system
        .coordinated_shutdown()
        .add_task("no-such-phase", "t", || async {})
        .unwrap_err();
    assert_eq!(e, AddTaskError::UnknownPhase("no-such-phase".into()));
    terminate(&system).await;
}

/// The reason is published when shutdown begins, and the old shutdown
/// hooks are the `actor-system-terminate` phase: they run after the actors.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_reason_is_published_and_hooks_run_last() {
    let system = system("reason", 5_000);
    let log = Log::default();
    listen::<ShutdownStarted>(&system, &log);
    spawn_stopper(&system, &log);
    let hook_log = log.clone();
    system
        .add_shutdown_hook("hook", move || async move { hook_log.push("hook") })
        .unwrap();
    add(&system, "actor-system-terminate", "task", &log);
    // Actors do not drain their mailboxes yet: hold the phases until the
    // listener has handled the event, or it could be stopped first.
    let seen = log.clone();
    system
        .coordinated_shutdown()
        .add_task("before-service-unbind", "wait", move || async move {
            eventually("the listener to handle the event", move || {
                !seen.events().is_empty()
            })
            .await;
        })
        .unwrap();
    tokio::time::timeout(
        Duration::from_secs(30),
        system
            .coordinated_shutdown()
            .run(ShutdownReason::User("maintenance".into())),
    )
    .await
    .unwrap();
    let events = log.events();
    assert_eq!(
        events[0],
        format!(
            "{:?}",
            ShutdownStarted {
                reason: ShutdownReason::User("maintenance".into())
            }
        )
    );
    assert_eq!(&events[1..], ["post_stop", "hook", "task"]);
}
