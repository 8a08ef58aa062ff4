//! The rest of Pekko's `CoordinatedShutdownSpec` (actor-tests) that applies
//! to volley's fixed phases; `coordinated_shutdown.rs` has the first cases
//! ("run ordered phases" with instant tasks, "only run once", "continue
//! after timeout or failure" for reporting and later phases, "be possible
//! to add tasks in later phase from task in earlier phase", "throw
//! exception when adding task to unknown phase"), `pekko_actor_system.rs`
//! "be run by ActorSystem.terminate" and the typed `ActorSystemSpec` cases,
//! and `coordinated_shutdown_sigterm.rs` the JVM-hook analogue (SIGTERM).
//!
//! Ported here:
//! - "have pre-defined phases from config" → `the_default_phases_are_pekkos_and_run_in_order`
//! - "run ordered phases" (a slow task in `b` holds `c`) → `a_slow_task_holds_the_next_phase`
//! - "continue after timeout or failure" (`b` not before a slow `a` task
//!   even when another `a` task failed) → `a_failed_task_does_not_hurry_the_next_phase`
//! - CoordinatedShutdown's "in case task.apply() throws" (recovered like a
//!   failed future) → `a_task_that_panics_before_making_its_future_does_not_stop_shutdown`
//! - tasks of a phase run concurrently ("note that tasks within same phase
//!   are performed in parallel") → `the_tasks_of_a_phase_run_concurrently`
//! - "re-register the same task if requested" (without the cancel) →
//!   `a_name_added_twice_runs_twice`
//! - "honor registration and cancellation in later phases" ("A adds B"
//!   runs, "A adds A" does not) → `a_task_can_add_to_a_later_phase_not_to_its_own`,
//!   and a task may add to the last phase → `a_task_can_add_a_hook_to_the_last_phase`
//! - "cancel tasks across threads" (without the cancel: tasks added from
//!   many threads, and from concurrent tasks to a later phase, all run
//!   once) → `tasks_added_concurrently_all_run_once`; adding while the run
//!   begins is all-or-nothing → `adding_while_the_run_begins_either_runs_or_is_refused`
//! - "terminate ActorSystem" and "access extension after system
//!   termination" → `after_termination_the_shutdown_answers_and_refuses_tasks`
//! - typed `ActorSystemSpec` "terminate the system when the guardian
//!   terminates" (stopping `/user`) → `stopping_the_user_guardian_terminates_the_system`
//!   (a volley bug, fixed: the system lived on, refusing every spawn); the
//!   root guardian likewise → `stopping_the_root_guardian_runs_the_coordinated_shutdown`
//!   (it ended the system at once, skipping every phase)
//!
//! Skipped, with the reason:
//! - "sort phases in topological order", "detect cycles in phases
//!   (non-DAG)", "parse phases from config", "abort if recover=off", "skip
//!   tasks in disabled phase": volley's phases are the fixed default list
//!   (`coordinated_shutdown::PHASES`), with one timeout and always
//!   `recover = on`; there is no `depends-on`, `recover` or `enabled`.
//! - "run from a given phase": `run` always starts at the first phase.
//! - "cancel shutdown tasks", the cancel parts of "re-register ...",
//!   "honor registration and cancellation ..." and "cancel tasks across
//!   threads": no `addCancellableTask`.
//! - "default exit code to 0", "... -1 when the Reason is ClusterDowning",
//!   the four "add and remove user JVM hooks ..." cases: volley never exits
//!   the process and has no JVM hooks (SIGTERM is `shutdown_on_sigterm`).
//! - "not be run by ActorSystem.terminate when run-by-actor-system-terminate=off",
//!   "not allow terminate-actor-system=off && run-by-actor-system-terminate=on":
//!   no such settings; `terminate` always runs it and it always terminates.
//! - the five "support actor termination tasks ..." / "allow watching the
//!   same actor twice ..." cases: no `addActorTerminationTask`.
//!
//! Differences from Pekko (also in
//! docs/reference/coordinated-shutdown.md): `run` and `terminate` are
//! `async fn`s, so shutdown begins
//! when the future is first polled, not when it is called (Pekko's `run`
//! starts at once and returns a future); a task added to a phase that has
//! begun is refused with `AddTaskError::PhaseStarted` (Pekko accepts it
//! and never runs it); a task still running at the phase timeout is
//! dropped (aborted), not just left behind.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{quiet_deliberate_panics, Log};
use volley::coordinated_shutdown::{ACTOR_SYSTEM_TERMINATE, PHASES};
use volley::{ActorSystem, AddTaskError, Settings, ShutdownReason};

/// How long a shutdown may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(30);

fn system(name: &str, phase_timeout_ms: u64) -> ActorSystem {
    let settings = Settings {
        shutdown_phase_timeout: Duration::from_millis(phase_timeout_ms),
        ..Settings::default()
    };
    common::system_with(name, settings).unwrap()
}

/// Adds a task that logs `name`.
fn add(system: &ActorSystem, phase: &str, name: &'static str, log: &Log) {
    let log = log.clone();
    system
        .coordinated_shutdown()
        .add_task(phase, name, move || async move { log.push(name) })
        .unwrap();
}

async fn terminate(system: &ActorSystem) {
    tokio::time::timeout(LIMIT, system.terminate())
        .await
        .expect("terminate() did not complete");
}

/// "have pre-defined phases from config": Pekko's default phases, in
/// Pekko's order; each takes tasks, and tasks added in reverse order run
/// in phase order, the last phase's after the actors have stopped.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_default_phases_are_pekkos_and_run_in_order() {
    assert_eq!(
        PHASES,
        [
            "before-service-unbind",
            "service-unbind",
            "service-requests-done",
            "service-stop",
            "before-cluster-shutdown",
            "cluster-sharding-shutdown-region",
            "cluster-leave",
            "cluster-exiting",
            "cluster-exiting-done",
            "cluster-shutdown",
            "before-actor-system-terminate",
            "actor-system-terminate",
        ]
    );
    assert_eq!(PHASES.last(), Some(&ACTOR_SYSTEM_TERMINATE));
    let system = system("phases", 5_000);
    let log = Log::default();
    system.spawn("stopper", log.stopper()).unwrap();
    for phase in PHASES.iter().rev() {
        add(&system, phase, phase, &log);
    }
    terminate(&system).await;
    let mut expected: Vec<&str> = PHASES[..PHASES.len() - 1].to_vec();
    expected.extend(["post_stop", ACTOR_SYSTEM_TERMINATE]);
    assert_eq!(log.events(), expected);
}

/// "run ordered phases": the next phase waits for a slow task of the one
/// before, not just for the quick ones.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_slow_task_holds_the_next_phase() {
    let system = system("slow", 10_000);
    let log = Log::default();
    add(&system, "service-unbind", "A", &log);
    add(&system, "service-requests-done", "B", &log);
    let slow = log.clone();
    system
        .coordinated_shutdown()
        .add_task("service-requests-done", "b2", move || async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            slow.push("B");
        })
        .unwrap();
    add(&system, "service-stop", "C", &log);
    terminate(&system).await;
    assert_eq!(log.events(), ["A", "B", "B", "C"]);
}

/// "continue after timeout or failure": a task that fails at once does not
/// end its phase early (the slow task of the same phase still comes
/// first), and a stuck task ends its phase at the timeout.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_failed_task_does_not_hurry_the_next_phase() {
    quiet_deliberate_panics();
    let system = system("failed", 300);
    let log = Log::default();
    let cs = system.coordinated_shutdown();
    let failing = log.clone();
    cs.add_task("service-unbind", "a1", move || async move {
        failing.push("A");
        panic!("task a1 fails on purpose");
    })
    .unwrap();
    let slow = log.clone();
    cs.add_task("service-unbind", "a2", move || async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        slow.push("A");
    })
    .unwrap();
    let stuck = log.clone();
    cs.add_task("service-requests-done", "b1", move || async move {
        stuck.push("B");
        std::future::pending::<()>().await;
    })
    .unwrap();
    add(&system, "service-stop", "C", &log);
    terminate(&system).await;
    assert_eq!(log.events(), ["A", "A", "B", "C"]);
}

/// Pekko recovers a task whose function throws before it returns its
/// future ("in case task.apply() throws"); in volley a task whose closure
/// panics before making its future is a failed task like any other: the
/// later phases run and the system terminates. (Regression: the closure
/// was called in the shutdown's own task, so its panic ended the shutdown
/// there and `terminate` never resolved.)
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_task_that_panics_before_making_its_future_does_not_stop_shutdown() {
    quiet_deliberate_panics();
    let system = system("throws", 5_000);
    let log = Log::default();
    add(&system, "service-unbind", "before", &log);
    system
        .coordinated_shutdown()
        .add_task("service-unbind", "throws", || -> std::future::Ready<()> {
            panic!("task closure panics on purpose before making its future")
        })
        .unwrap();
    add(&system, "service-stop", "after", &log);
    terminate(&system).await;
    assert!(system.is_terminated());
    assert_eq!(log.events(), ["before", "after"]);
}

/// Tasks within a phase run concurrently: two tasks that each wait for
/// the other both finish, well before the phase timeout.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_tasks_of_a_phase_run_concurrently() {
    let system = system("concurrent", 20_000);
    let log = Log::default();
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    for name in ["first", "second"] {
        let (barrier, log) = (barrier.clone(), log.clone());
        system
            .coordinated_shutdown()
            .add_task("service-unbind", name, move || async move {
                barrier.wait().await;
                log.push("met");
            })
            .unwrap();
    }
    add(&system, "service-stop", "next", &log);
    terminate(&system).await;
    assert_eq!(log.events(), ["met", "met", "next"]);
}

/// "re-register the same task if requested": names are for the logs; a
/// task added three times under one name runs three times.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_name_added_twice_runs_twice() {
    let system = system("same-name", 5_000);
    let log = Log::default();
    for _ in 0..3 {
        add(&system, "service-unbind", "labor", &log);
    }
    terminate(&system).await;
    assert_eq!(log.events(), ["labor", "labor", "labor"]);
}

/// "honor registration and cancellation in later phases": a task adding
/// to a later phase is honoured ("A adds B"), one adding to its own
/// phase, which has begun, is not ("A adds A" never runs): volley says so
/// with `PhaseStarted`.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_task_can_add_to_a_later_phase_not_to_its_own() {
    let system = system("own-phase", 5_000);
    let log = Log::default();
    let (sys, task_log) = (system.clone(), log.clone());
    system
        .coordinated_shutdown()
        .add_task("service-unbind", "taskA", move || async move {
            let cs = sys.coordinated_shutdown();
            let later = task_log.clone();
            cs.add_task("service-stop", "dependentTaskB", move || async move {
                later.push("A adds B")
            })
            .unwrap();
            let own = task_log.clone();
            let refused = cs.add_task("service-unbind", "dependentTaskA", move || async move {
                own.push("A adds A")
            });
            assert_eq!(
                refused,
                Err(AddTaskError::PhaseStarted {
                    phase: "service-unbind".into(),
                    task: "dependentTaskA".into(),
                })
            );
            task_log.push("refused");
        })
        .unwrap();
    terminate(&system).await;
    assert_eq!(log.events(), ["refused", "A adds B"]);
}

/// A task may add to `actor-system-terminate` too: the added task is a
/// shutdown hook and runs after the actors have stopped.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_task_can_add_a_hook_to_the_last_phase() {
    let system = system("add-hook", 5_000);
    let log = Log::default();
    system.spawn("stopper", log.stopper()).unwrap();
    let (sys, task_log) = (system.clone(), log.clone());
    system
        .coordinated_shutdown()
        .add_task(
            "before-actor-system-terminate",
            "adder",
            move || async move {
                add(&sys, ACTOR_SYSTEM_TERMINATE, "hook", &task_log);
                task_log.push("adder");
            },
        )
        .unwrap();
    terminate(&system).await;
    assert_eq!(log.events(), ["adder", "post_stop", "hook"]);
}

/// "cancel tasks across threads", without the cancel: 20 tasks added from
/// four threads at once all run once, and each adds a task to a later
/// phase while the others run; those 20 run once each, after all of the
/// first 20.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn tasks_added_concurrently_all_run_once() {
    let system = system("threads", 10_000);
    let log = Log::default();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..5 {
                    let (sys, log) = (system.clone(), log.clone());
                    system
                        .coordinated_shutdown()
                        .add_task("service-unbind", "concurrentTaskA", move || async move {
                            log.push("A");
                            add(&sys, "service-stop", "B", &log);
                        })
                        .unwrap();
                }
            });
        }
    });
    terminate(&system).await;
    let events = log.events();
    assert_eq!(events.len(), 40, "{events:?}");
    assert!(events[..20].iter().all(|e| e == "A"), "{events:?}");
    assert!(events[20..].iter().all(|e| e == "B"), "{events:?}");
}

/// A task added while the run begins either runs exactly once (its add
/// succeeded) or never (its add was refused): none is accepted and lost.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn adding_while_the_run_begins_either_runs_or_is_refused() {
    let system = system("race", 10_000);
    let ran = Log::default();
    let accepted_so_far = Arc::new(AtomicUsize::new(0));
    let adder = {
        let (system, ran) = (system.clone(), ran.clone());
        let accepted_so_far = accepted_so_far.clone();
        std::thread::spawn(move || {
            let mut accepted = Vec::new();
            for i in 0..1_000_000 {
                let ran = ran.clone();
                let added = system.coordinated_shutdown().add_task(
                    "service-stop",
                    "racer",
                    move || async move { ran.push(i.to_string()) },
                );
                match added {
                    Ok(()) => accepted.push(i.to_string()),
                    Err(AddTaskError::PhaseStarted { .. }) => return accepted,
                    Err(e) => panic!("unexpected {e}"),
                }
                accepted_so_far.fetch_add(1, Ordering::Relaxed);
            }
            panic!("the run never began refusing tasks");
        })
    };
    // Let the adder get going, then run: the race is on the phase's start.
    while accepted_so_far.load(Ordering::Relaxed) < 100 {
        tokio::task::yield_now().await;
    }
    terminate(&system).await;
    let mut accepted = adder.join().expect("adder thread");
    let mut ran = ran.events();
    ran.sort();
    accepted.sort();
    assert!(!accepted.is_empty());
    assert_eq!(ran, accepted);
}

/// "terminate ActorSystem" and "access extension after system
/// termination": once `run` resolves the system has terminated with the
/// reason given; afterwards the shutdown still answers, refuses tasks to
/// every phase, and a new run resolves at once and changes nothing.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn after_termination_the_shutdown_answers_and_refuses_tasks() {
    let system = system("after", 5_000);
    let log = Log::default();
    add(&system, "service-unbind", "once", &log);
    let cs = system.coordinated_shutdown();
    assert_eq!(cs.reason(), None);
    let custom = ShutdownReason::User("custom".into());
    tokio::time::timeout(LIMIT, cs.run(custom.clone()))
        .await
        .expect("run did not complete");
    assert!(system.is_terminated());
    assert_eq!(cs.reason(), Some(custom.clone()));
    for phase in [PHASES[0], ACTOR_SYSTEM_TERMINATE] {
        let refused = cs.add_task(phase, "late", || async {});
        assert!(
            matches!(refused, Err(AddTaskError::PhaseStarted { .. })),
            "{phase}: {refused:?}"
        );
    }
    tokio::time::timeout(LIMIT, cs.run(ShutdownReason::Terminate))
        .await
        .expect("a second run did not resolve");
    assert_eq!(cs.reason(), Some(custom));
    assert_eq!(log.events(), ["once"]);
}

/// Typed `ActorSystemSpec` "terminate the system when the guardian
/// terminates" (classic: the system ends with its user guardian): stopping
/// `/user` runs the coordinated shutdown, its tasks included, and the
/// system terminates with `GuardianStopped` as the reason.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_user_guardian_terminates_the_system() {
    let system = system("pekko-cs-guardian", 5_000);
    let log = Log::default();
    add(&system, PHASES[0], "first phase", &log);
    let actor = system.spawn("a", log.stopper()).unwrap();
    let user = system.lookup("/user").unwrap().expect("the user guardian");
    assert!(system.stop(&user));
    tokio::time::timeout(LIMIT, system.when_terminated())
        .await
        .expect("the system did not terminate");
    assert!(actor.is_terminated());
    assert_eq!(
        system.coordinated_shutdown().reason(),
        Some(ShutdownReason::GuardianStopped)
    );
    assert!(
        log.events().contains(&"first phase".to_string()),
        "{:?}",
        log.events()
    );
}

/// The same for the root guardian: stopping `/` runs the coordinated
/// shutdown (it used to end the system at once, skipping every phase).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_root_guardian_runs_the_coordinated_shutdown() {
    let system = system("pekko-cs-root", 5_000);
    let log = Log::default();
    add(&system, PHASES[0], "first phase", &log);
    let root = system.lookup("/").unwrap().expect("the root guardian");
    assert!(system.stop(&root));
    tokio::time::timeout(LIMIT, system.when_terminated())
        .await
        .expect("the system did not terminate");
    assert_eq!(
        system.coordinated_shutdown().reason(),
        Some(ShutdownReason::GuardianStopped)
    );
    assert_eq!(log.events(), ["first phase"]);
}
