//! ManualTime with a system on the test's own runtime: the probe's blocking
//! waits must leave that runtime free to run the actors.

use std::time::Duration;

use volley::{ActorRef, ActorSystem, DispatcherKind, Props, Settings};
use volley_testkit::{actor_fn, FnActor, ManualTime, TestProbe};

enum Msg {
    After(u64),
    Due(u64),
}

/// Reports `n` after `n` hours, for each `n` it gets.
fn later(to: ActorRef<u64>) -> Props<FnActor<Msg>> {
    actor_fn(move |ctx, msg| {
        match msg {
            Msg::After(n) => ctx.schedule_once(n, Duration::from_secs(3600 * n), Msg::Due(n)),
            Msg::Due(n) => to.tell(n),
        }
        Ok(())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_fire_in_deadline_order_on_the_applications_runtime() {
    let time = ManualTime::new();
    let mut settings = time.settings(Settings::default());
    settings.default_dispatcher.kind = DispatcherKind::AppRuntime;
    assert_eq!(settings.manual_clock.as_ref(), Some(time.clock()));
    let system =
        ActorSystem::with_runtime("manual-app", settings, tokio::runtime::Handle::current())
            .unwrap();
    let probe = TestProbe::new(&system);
    let to = probe.actor_ref();
    let later = system.spawn("later", later(to)).unwrap();
    for n in [3, 1, 2] {
        later.tell(Msg::After(n));
    }
    time.wait_for_timers(3);
    assert_eq!(time.next_due(), Some(Duration::from_secs(3600)));
    time.advance(Duration::from_secs(3600 * 3));
    assert_eq!(probe.receive_n(3), [1, 2, 3]);
    assert_eq!(time.elapsed(), Duration::from_secs(3600 * 3));
    assert_eq!(time.pending_timers(), 0);
    system.terminate().await;
}

#[test]
fn waiting_for_timers_that_never_come_fails() {
    let time = ManualTime::new();
    let err = std::panic::catch_unwind(|| time.wait_for_timers(1)).expect_err("none is armed");
    let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("expected 1 armed timers, found 0"), "{text}");
}
