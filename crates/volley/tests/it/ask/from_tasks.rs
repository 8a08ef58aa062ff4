//! An `ask` from a task to an actor on the same runtime's `app-runtime`
//! dispatcher runs the woken actor in the asking task (no yield): only on a
//! thread of that runtime, and within the task's cooperative budget.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley::{ActorSystem, DispatcherKind, Props, ReplyTo, Settings};
use volley_testkit::{actor_fn, FnActor};

const T: Duration = Duration::from_secs(10);

fn on_app_runtime() -> Settings {
    let mut settings = Settings::default();
    settings.default_dispatcher.kind = DispatcherKind::AppRuntime;
    settings
}

/// Answers the name of the thread it runs on, after checking that it can
/// spawn on the current runtime (a handler may rely on its runtime).
fn where_am_i() -> Props<FnActor<ReplyTo<String>>> {
    actor_fn(|_, reply_to: ReplyTo<String>| {
        drop(tokio::spawn(async {}));
        reply_to.tell(std::thread::current().name().unwrap_or("").to_string());
        Ok(())
    })
}

/// Tasks of another runtime asking the actor never run it on their own
/// threads: every answer names a thread of the actor's runtime.
#[test]
fn asks_from_another_runtime_never_run_the_actor_on_its_threads() {
    let home = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("home-rt")
        .enable_all()
        .build()
        .unwrap();
    let other = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("other-rt")
        .enable_all()
        .build()
        .unwrap();
    let system =
        ActorSystem::with_runtime("inline-home", on_app_runtime(), home.handle().clone()).unwrap();
    let actor = system.spawn("where", where_am_i()).unwrap();
    // Tasks of the home runtime ask too, so that its threads run the actor
    // (and capture it) while the other runtime's tasks ask.
    let askers: Vec<_> = (0..4)
        .map(|i| {
            let actor = actor.clone();
            let rt = if i % 2 == 0 { &home } else { &other };
            rt.spawn(async move {
                let mut names = Vec::new();
                for _ in 0..2_000 {
                    names.push(actor.ask(|r| r, T).await.unwrap());
                }
                names
            })
        })
        .collect();
    for asker in askers {
        let names = other.block_on(asker).unwrap();
        assert!(
            names.iter().all(|n| n == "home-rt"),
            "{:?}",
            names.iter().find(|n| *n != "home-rt")
        );
    }
    home.block_on(system.terminate());
}

/// A task asking in a loop, each ask answered at once in its own poll,
/// still yields to the other tasks of its thread now and then.
#[test]
fn a_task_asking_in_a_loop_still_lets_the_other_tasks_run() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let system =
        ActorSystem::with_runtime("inline-coop", on_app_runtime(), rt.handle().clone()).unwrap();
    let actor = system.spawn("where", where_am_i()).unwrap();
    let turns = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    rt.block_on(async {
        let other = tokio::spawn({
            let (turns, done) = (turns.clone(), done.clone());
            async move {
                while !done.load(Ordering::Relaxed) {
                    turns.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            }
        });
        let asker = tokio::spawn({
            let (actor, turns) = (actor.clone(), turns.clone());
            async move {
                // The first asks let the actor's runner run on this thread.
                for _ in 0..10 {
                    actor.ask(|r| r, T).await.unwrap();
                }
                let before = turns.load(Ordering::Relaxed);
                for _ in 0..5_000 {
                    actor.ask(|r| r, T).await.unwrap();
                }
                turns.load(Ordering::Relaxed) - before
            }
        });
        let others_turns = asker.await.unwrap();
        done.store(true, Ordering::Relaxed);
        other.await.unwrap();
        assert!(
            others_turns >= 5_000 / 1_000,
            "the other task ran {others_turns} times during 5 000 asks"
        );
        system.terminate().await;
    });
}
