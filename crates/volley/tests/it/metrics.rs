//! `[metrics]`: what the runtime records through the `metrics` facade, with
//! a recorder of the test's own installed for this test binary.

use crate::common;

use std::time::Duration;

use common::{eventually, quiet_deliberate_panics, system_with};
use volley::{ActorError, DispatcherKind, DispatcherSettings, MetricsSettings, Props, Settings};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, RecordedMetrics};

fn enabled() -> Settings {
    Settings {
        metrics: MetricsSettings {
            enabled: true,
            sample_interval: Duration::from_millis(20),
        },
        ..Settings::default()
    }
}

enum Msg {
    Fail,
    Panic,
    Ignore,
    /// Keeps the reply handle and never answers.
    Hold(volley::ReplyTo<()>),
}

/// Fails, panics, ignores or holds the reply handle, as told.
fn flaky() -> Props<FnActor<Msg, Vec<volley::ReplyTo<()>>>> {
    actor_fn_with(Vec::new(), |held, _ctx, msg: Msg| match msg {
        Msg::Fail => Err(ActorError::new("failed on purpose")),
        Msg::Panic => panic!("panicked on purpose"),
        Msg::Ignore => Ok(()),
        Msg::Hold(reply) => {
            held.push(reply);
            Ok(())
        }
    })
    .props()
}

#[volley_testkit::each_dispatcher]
#[test]
fn failures_restarts_stops_dead_letters_and_ask_timeouts_are_counted() {
    quiet_deliberate_panics();
    let r = RecordedMetrics::install();
    let name = volley_testkit::DispatcherUnderTest::name("metrics-counted");
    let sys = system_with(&name, enabled()).unwrap();
    let s = &format!("system={name}");
    let flaky = sys.spawn("flaky", flaky()).unwrap();
    flaky.tell(Msg::Fail);
    flaky.tell(Msg::Panic);
    eventually("two restarts counted", || {
        r.counter("volley_actor_restarts_total", s) == Some(2)
    });
    assert_eq!(
        r.counter("volley_actor_failures_total", &format!("kind=error,{s}")),
        Some(1)
    );
    assert_eq!(
        r.counter("volley_actor_failures_total", &format!("kind=panic,{s}")),
        Some(1)
    );
    let started = r.counter("volley_actor_starts_total", s).unwrap();
    assert!(started >= 3, "the guardians and flaky started: {started}");

    let asked = sys
        .runtime_handle()
        .block_on(flaky.ask(Msg::Hold, Duration::from_millis(50)));
    assert!(asked.is_err());
    assert_eq!(r.counter("volley_ask_timeouts_total", s), Some(1));

    let stops_before = r.counter("volley_actor_stops_total", s).unwrap_or(0);
    sys.stop(&flaky);
    eventually("the stop counted", || {
        r.counter("volley_actor_stops_total", s) > Some(stops_before)
    });
    eventually("flaky terminated", || flaky.is_terminated());
    flaky.tell(Msg::Ignore);
    assert_eq!(
        r.counter(
            "volley_dead_letters_total",
            &format!("reason=recipient_terminated,{s}")
        ),
        Some(1)
    );
    assert_eq!(
        r.counter(
            "volley_dead_letters_total",
            &format!("reason=no_routee,{s}")
        ),
        Some(0),
        "every reason is registered, at zero until it happens"
    );
}

#[volley_testkit::each_dispatcher]
#[test]
fn parked_workers_are_sampled_per_dispatcher() {
    let r = RecordedMetrics::install();
    let _sys = system_with("metrics-sampled", with_pool(enabled())).unwrap();
    let labels = "dispatcher=pool,system=metrics-sampled";
    let parked = || r.gauge("volley_dispatcher_parked_workers", labels);
    eventually("idle workers parked and sampled", || {
        parked().is_some_and(|p| (1.0..=2.0).contains(&p))
    });
}

fn with_pool(mut settings: Settings) -> Settings {
    // A pool of its own, whatever kind the default dispatcher is under test
    // (an app-runtime dispatcher has no workers, and no counts).
    settings.dispatchers.insert(
        "pool".into(),
        DispatcherSettings {
            kind: DispatcherKind::WorkStealing,
            threads: 2,
            ..DispatcherSettings::default()
        },
    );
    settings
}

#[volley_testkit::each_dispatcher]
#[test]
fn a_pool_counts_messages_activations_and_steals_and_samples_mailbox_depth() {
    let r = RecordedMetrics::install();
    let sys = system_with("metrics-pool", with_pool(enabled())).unwrap();
    let labels = "dispatcher=pool,system=metrics-pool";
    let counter = |name: &str| r.counter(name, labels).unwrap_or(0);
    let flaky = sys.spawn("flaky", flaky().with_dispatcher("pool")).unwrap();
    // One actor's messages, sent faster than it runs: some activations
    // handle several, and the first one sampled saw a backlog.
    for _ in 0..1000 {
        flaky.tell(Msg::Ignore);
    }
    eventually("the 1000 messages counted", || {
        counter("volley_dispatcher_messages_total") >= 1000
    });
    let activations = counter("volley_dispatcher_activations_total");
    // One per message at most, plus the start: a worker that keeps up
    // with the sender runs each message alone.
    assert!(
        (1..=1001).contains(&activations),
        "{activations} activations for 1000 messages (and the start)"
    );
    // A worker samples every 64th activation (and its first): whether one
    // of those met a backlog depends on timing, so bursts go on until one
    // did. A sample counts the message about to run.
    eventually("a sampled depth with a backlog", || {
        for _ in 0..200 {
            flaky.tell(Msg::Ignore);
        }
        r.histogram("volley_mailbox_depth", labels)
            .is_some_and(|depths| depths.iter().any(|d| *d >= 1.0))
    });

    let sleepers: Vec<_> = (0..100)
        .map(|_| {
            let sleeper = actor_fn(|_, ms: u64| {
                std::thread::sleep(Duration::from_millis(ms));
                Ok(())
            });
            sys.spawn_anonymous(sleeper.with_dispatcher("pool"))
                .unwrap()
        })
        .collect();
    // Tells each sleeper to sleep, from one worker: the tasks queue up on
    // that worker, where the other has to steal them.
    let fan_out = actor_fn(move |_, ()| {
        for sleeper in &sleepers {
            sleeper.tell(2);
        }
        Ok(())
    });
    let fan_out = sys
        .spawn("fan-out", fan_out.with_dispatcher("pool"))
        .unwrap();
    fan_out.tell(());
    eventually("the idle worker stole", || {
        counter("volley_dispatcher_steals_total") >= 1
    });
    let spinning = r
        .gauge("volley_dispatcher_spinning_workers", labels)
        .unwrap();
    assert!((0.0..=2.0).contains(&spinning), "{spinning}");
}

#[volley_testkit::each_dispatcher]
#[test]
fn nothing_is_registered_when_metrics_are_off() {
    let r = RecordedMetrics::install();
    let sys = system_with("metrics-off", with_pool(Settings::default())).unwrap();
    let flaky = sys.spawn("flaky", flaky().with_dispatcher("pool")).unwrap();
    flaky.tell(Msg::Fail);
    for _ in 0..100 {
        flaky.tell(Msg::Ignore);
    }
    // A window for a wrongly registered series to show (what is checked).
    std::thread::sleep(Duration::from_millis(100));
    assert!(!r.series().iter().any(|s| s.contains("system=metrics-off")));
}

#[volley_testkit::each_dispatcher]
#[test]
fn too_short_a_sample_interval_is_refused() {
    let mut settings = enabled();
    settings.metrics.sample_interval = Duration::from_millis(1);
    let error = system_with("metrics-bad", settings)
        .unwrap_err()
        .to_string();
    assert!(error.contains("metrics.sample_interval"), "{error}");
}
