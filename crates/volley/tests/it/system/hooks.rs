//! Shutdown hooks: they run after every actor has stopped and before
//! `terminate()` returns, in order, on a live runtime; a panicking or stuck
//! hook does not stop termination.

use crate::common;

use common::Log;

use std::future::Future;
use std::time::Duration;

use common::log_capture::{self, logged};
use common::{eventually, quiet_deliberate_panics};
use tracing::Level;
use volley::{Actor, ActorSystem, Context, HandleResult, Props, Settings, ShutdownHookError};
use volley_testkit::DispatcherUnderTest;

/// Spawns `children` children in `pre_start`; logs its `post_stop`.
struct Recorder {
    children: u32,
    log: Log,
}

impl Actor for Recorder {
    type Msg = ();

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        for i in 0..self.children {
            let log = self.log.clone();
            ctx.spawn(
                &format!("child{i}"),
                Props::new(move || Recorder {
                    children: 0,
                    log: log.clone(),
                }),
            )?;
        }
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }

    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        self.log
            .push(format!("post_stop {}", ctx.path().elements()));
    }
}

/// Adds a hook that is handed the system and the log.
fn add_hook<Fut>(
    system: &ActorSystem,
    name: &'static str,
    log: &Log,
    hook: impl FnOnce(ActorSystem, Log) -> Fut + Send + 'static,
) where
    Fut: Future<Output = ()> + Send + 'static,
{
    let (sys, log) = (system.clone(), log.clone());
    system
        .add_shutdown_hook(name, move || hook(sys, log))
        .unwrap();
}

/// Adds a hook that logs `name` when it starts and `name done` when it ends.
fn logging_hook(system: &ActorSystem, name: &'static str, log: &Log) {
    add_hook(system, name, log, move |_, log| async move {
        log.push(name);
        // Yields, so a hook that ran concurrently with the next would show.
        tokio::time::sleep(Duration::from_millis(5)).await;
        log.push(format!("{name} done"));
    });
}

/// A system with default settings, and an empty log.
fn start(name: &str) -> (ActorSystem, Log) {
    (common::system(name).unwrap(), Log::default())
}

/// Fails the test instead of hanging it if termination never completes.
async fn terminate(system: &ActorSystem) {
    tokio::time::timeout(Duration::from_secs(30), system.terminate())
        .await
        .expect("terminate() did not complete");
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn hooks_run_after_every_post_stop_and_before_terminate_returns() {
    let (system, log) = start("hooks-after-actors");
    for name in ["a", "b"] {
        let log = log.clone();
        system
            .spawn(
                name,
                Props::new(move || Recorder {
                    children: 2,
                    log: log.clone(),
                }),
            )
            .unwrap();
    }
    add_hook(&system, "check", &log, |system, log| async move {
        log.push(format!("hook sees terminated={}", system.is_terminated()));
    });

    terminate(&system).await;

    let events = log.events();
    assert_eq!(events.len(), 7, "{events:?}");
    assert_eq!(events[6], "hook sees terminated=false", "{events:?}");
    let mut stops = events[..6].to_vec();
    stops.sort();
    assert_eq!(
        stops,
        [
            "post_stop /user/a",
            "post_stop /user/a/child0",
            "post_stop /user/a/child1",
            "post_stop /user/b",
            "post_stop /user/b/child0",
            "post_stop /user/b/child1",
        ]
    );
    assert!(system.is_terminated());
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn hooks_run_once_one_after_another_in_registration_order() {
    let (system, log) = start("hooks-in-order");
    for name in ["first", "second", "third"] {
        logging_hook(&system, name, &log);
    }

    terminate(&system).await;
    terminate(&system).await;
    system.when_terminated().await;

    assert_eq!(
        log.events(),
        [
            "first",
            "first done",
            "second",
            "second done",
            "third",
            "third done"
        ]
    );
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn when_terminated_waits_for_the_hooks() {
    let (system, log) = start("hooks-when-terminated");
    logging_hook(&system, "flush", &log);
    let waiter = {
        let system = system.clone();
        let log = log.clone();
        tokio::spawn(async move {
            system.when_terminated().await;
            log.events()
        })
    };

    terminate(&system).await;

    assert_eq!(waiter.await.unwrap(), ["flush", "flush done"]);
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_hook_can_use_the_runtime() {
    let (system, log) = start("hooks-use-runtime");
    add_hook(&system, "runtime", &log, |system, log| async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let spawned = tokio::spawn(async { 20 }).await.unwrap();
        let on_handle = system.runtime_handle().spawn(async { 22 }).await.unwrap();
        let blocking = tokio::task::spawn_blocking(|| "blocking").await.unwrap();
        log.push(format!("{} {blocking}", spawned + on_handle));
    });

    terminate(&system).await;

    assert_eq!(log.events(), ["42 blocking"]);
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panicking_hook_is_logged_and_the_next_one_runs() {
    quiet_deliberate_panics();
    log_capture::install();
    let name = DispatcherUnderTest::name("hooks-panic");
    let (system, log) = start(&name);
    logging_hook(&system, "before", &log);
    system
        .add_shutdown_hook("panics-when-called", || -> std::future::Ready<()> {
            panic!("hook call failed on purpose")
        })
        .unwrap();
    system
        .add_shutdown_hook("panics-when-polled", || async {
            tokio::task::yield_now().await;
            panic!("hook future failed on purpose")
        })
        .unwrap();
    logging_hook(&system, "after", &log);

    terminate(&system).await;

    assert_eq!(
        log.events(),
        ["before", "before done", "after", "after done"]
    );
    for (hook, text) in [
        ("panics-when-called", "hook call failed on purpose"),
        ("panics-when-polled", "hook future failed on purpose"),
    ] {
        let errors = logged(&[&name, hook, text]);
        assert_eq!(errors.len(), 1, "{hook}: {errors:?}");
        assert_eq!(errors[0].level, Level::ERROR);
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn adding_a_hook_once_termination_began_is_an_error() {
    let (system, log) = start("hooks-too-late");
    add_hook(&system, "adds-another", &log, |system, log| async move {
        let refused = system.add_shutdown_hook("from-a-hook", || async {});
        log.push(format!("{refused:?}"));
    });

    terminate(&system).await;

    let ran = log.clone();
    let e = system
        .add_shutdown_hook("late", move || async move { ran.push("late ran") })
        .unwrap_err();
    assert!(
        matches!(e, ShutdownHookError::Terminating { hook: "late", ref system } if system == "hooks-too-late"),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(
        message.contains("\"late\"")
            && message.contains("hooks-too-late")
            && message.contains("already terminating"),
        "{message}"
    );
    assert_eq!(log.events().len(), 1, "{:?}", log.events());
    assert!(
        log.events()[0].starts_with("Err(Terminating { hook: \"from-a-hook\""),
        "{:?}",
        log.events()
    );
}

/// Logs when it is dropped, which is how an abandoned hook's future ends.
struct LogOnDrop(Log, &'static str);

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        self.0.push(self.1);
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_cap_abandons_a_stuck_hook_and_skips_the_rest() {
    log_capture::install();
    let settings = Settings {
        // Long enough that "quick" never meets it, even on a loaded machine.
        shutdown_hooks_timeout: Duration::from_secs(1),
        ..Settings::default()
    };
    let name = DispatcherUnderTest::name("hooks-cap");
    let system = common::system_with(&name, settings).unwrap();
    let log = Log::default();
    logging_hook(&system, "quick", &log);
    add_hook(&system, "stuck", &log, |_, log| async move {
        let _dropped = LogOnDrop(log.clone(), "stuck dropped");
        log.push("stuck");
        std::future::pending::<()>().await;
    });
    logging_hook(&system, "skipped", &log);

    terminate(&system).await;

    // The abandoned future is dropped by the runtime, possibly just after
    // terminate() returned.
    eventually("the stuck hook to be dropped", || log.events().len() == 4);
    assert_eq!(
        log.events(),
        ["quick", "quick done", "stuck", "stuck dropped"]
    );
    for (hook, what) in [("stuck", "abandoned"), ("skipped", "skipped")] {
        let warnings = logged(&[&name, &format!("hook=\"{hook}\""), what]);
        assert_eq!(warnings.len(), 1, "{hook}: {warnings:?}");
        assert_eq!(warnings[0].level, Level::WARN);
    }
}
