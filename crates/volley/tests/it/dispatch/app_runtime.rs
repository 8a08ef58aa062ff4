//! The application-runtime dispatcher and `ActorSystem::with_runtime`:
//! actors run as tasks on the application's tokio runtime, with the
//! cell's semantics (ordering, fairness, supervision) intact.

use crate::common;

use std::time::Duration;

use volley::{ActorRef, ActorSystem, DispatcherKind, DispatcherSettings, Props, ReplyTo, Settings};
use volley_testkit::{actor_fn_with, FnActor};

const T: Duration = Duration::from_secs(10);

fn app_runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("app-rt")
        .enable_all()
        .build()
        .unwrap()
}

fn on_app_runtime() -> Settings {
    let mut settings = Settings::default();
    settings.default_dispatcher.kind = DispatcherKind::AppRuntime;
    settings
}

enum Msg {
    /// Answers the running thread's name and how many `Add`s came before.
    Where(ReplyTo<(String, Vec<u64>)>),
    Add(u64),
    /// Sends itself another `Spin`, for ever.
    Spin,
    Fail,
}

/// Records the numbers it gets; tells where it runs and what it has.
fn recorder() -> Props<FnActor<Msg, Vec<u64>>> {
    actor_fn_with(Vec::new(), |seen, ctx, msg: Msg| {
        match msg {
            Msg::Where(r) => {
                let name = std::thread::current().name().unwrap_or("").to_string();
                r.tell((name, seen.clone()));
            }
            Msg::Add(n) => seen.push(n),
            Msg::Spin => ctx.myself().tell(Msg::Spin),
            Msg::Fail => panic!("failing on purpose"),
        }
        Ok(())
    })
    .props()
}

async fn where_and_seen(actor: &ActorRef<Msg>) -> (String, Vec<u64>) {
    actor.ask(Msg::Where, T).await.unwrap()
}

/// Handlers run on the application's runtime threads, and messages from
/// one sender arrive in order.
#[test]
fn actors_run_on_the_application_runtime_in_order() {
    let rt = app_runtime(2);
    let system = ActorSystem::with_runtime("app", on_app_runtime(), rt.handle().clone()).unwrap();
    let actor = system.spawn("recorder", recorder()).unwrap();
    rt.block_on(async {
        for n in 0..10_000 {
            actor.tell(Msg::Add(n));
        }
        let (thread, seen) = where_and_seen(&actor).await;
        assert_eq!(thread, "app-rt");
        assert_eq!(seen, (0..10_000).collect::<Vec<_>>());
        system.terminate().await;
    });
}

/// An actor that always has work yields its thread after `throughput`
/// messages: on a one-thread runtime, another actor still gets its turn.
#[test]
fn a_busy_actor_does_not_starve_the_others_on_one_thread() {
    let rt = app_runtime(1);
    let system = ActorSystem::with_runtime("fair", on_app_runtime(), rt.handle().clone()).unwrap();
    let busy = system.spawn("busy", recorder()).unwrap();
    let other = system.spawn("other", recorder()).unwrap();
    rt.block_on(async {
        busy.tell(Msg::Spin);
        let (_, seen) = where_and_seen(&other).await;
        assert!(seen.is_empty());
        system.stop(&busy);
        system.terminate().await;
    });
}

/// A failing actor is restarted by its supervisor (the user guardian's
/// default strategy), as on a pool.
#[test]
fn supervision_restarts_a_failed_actor() {
    common::quiet_deliberate_panics();
    let rt = app_runtime(2);
    let system =
        ActorSystem::with_runtime("supervised", on_app_runtime(), rt.handle().clone()).unwrap();
    let actor = system.spawn("recorder", recorder()).unwrap();
    rt.block_on(async {
        actor.tell(Msg::Add(1));
        actor.tell(Msg::Fail);
        actor.tell(Msg::Add(2));
        // The restart dropped the state from before the failure.
        let (_, seen) = where_and_seen(&actor).await;
        assert_eq!(seen, vec![2]);
        system.terminate().await;
    });
}

/// Asks cross between a pool dispatcher and the application-runtime one
/// in both directions.
#[test]
fn actors_on_the_pool_and_on_the_runtime_talk_to_each_other() {
    let rt = app_runtime(2);
    let mut settings = Settings::default();
    settings.dispatchers.insert(
        "app".into(),
        DispatcherSettings {
            kind: DispatcherKind::AppRuntime,
            ..DispatcherSettings::default()
        },
    );
    let system = ActorSystem::with_runtime("mixed", settings, rt.handle().clone()).unwrap();
    let on_runtime = system
        .spawn("on-runtime", recorder().with_dispatcher("app"))
        .unwrap();
    let on_pool = system.spawn("on-pool", recorder()).unwrap();
    rt.block_on(async {
        on_runtime.tell(Msg::Add(7));
        on_pool.tell(Msg::Add(8));
        let (runtime_thread, a) = where_and_seen(&on_runtime).await;
        let (pool_thread, b) = where_and_seen(&on_pool).await;
        assert_eq!((runtime_thread.as_str(), a), ("app-rt", vec![7]));
        assert!(pool_thread.starts_with("volley-default"), "{pool_thread}");
        assert_eq!(b, vec![8]);
        system.terminate().await;
    });
}

/// Terminating the system leaves the application's runtime running.
#[test]
fn terminating_the_system_leaves_the_runtime_running() {
    let rt = app_runtime(2);
    let system =
        ActorSystem::with_runtime("leaves", on_app_runtime(), rt.handle().clone()).unwrap();
    rt.block_on(system.terminate());
    assert!(system.is_terminated());
    let still = rt.block_on(async { tokio::spawn(async { 42 }).await.unwrap() });
    assert_eq!(still, 42);
}

/// Without `with_runtime`, actors of an `app-runtime` dispatcher run on the
/// system's own runtime.
#[test]
fn without_an_application_runtime_the_systems_own_runtime_runs_them() {
    let system = ActorSystem::with_settings("own", on_app_runtime()).unwrap();
    let actor = system.spawn("recorder", recorder()).unwrap();
    let rt = app_runtime(1);
    rt.block_on(async {
        let (thread, _) = where_and_seen(&actor).await;
        assert!(thread.starts_with("volley-own-io"), "{thread}");
        system.terminate().await;
    });
}
