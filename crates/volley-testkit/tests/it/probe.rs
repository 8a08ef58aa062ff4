//! TestProbe: its ref works like any actor's, on both dispatcher kinds, and
//! each expectation fails when what arrives is not what it expects.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use volley::{ActorRef, ActorSystem, DeadLetter, DispatcherKind, Settings};
use volley_testkit::{actor_fn, await_cond, within, FishingOutcome, TestProbe};

/// For windows in which nothing is to arrive.
const SHORT: Duration = Duration::from_millis(50);
/// For windows that must hold what is sent in them (on a loaded machine a
/// reply may take a while), yet end a failing expectation.
const ENOUGH: Duration = Duration::from_secs(2);

fn systems(name: &str) -> Vec<ActorSystem> {
    let mut app = Settings::default();
    app.default_dispatcher.kind = DispatcherKind::AppRuntime;
    vec![
        ActorSystem::new(&format!("{name}-pool")).unwrap(),
        ActorSystem::with_settings(&format!("{name}-app"), app).unwrap(),
    ]
}

/// Echoes each number to `to`, doubled, from its own dispatcher thread.
fn doubler(system: &ActorSystem, probe: &TestProbe<u32>) -> ActorRef<u32> {
    let to = probe.actor_ref();
    let doubler = actor_fn(move |ctx, n: u32| {
        if n == 0 {
            ctx.stop_self();
        }
        to.tell(n * 2);
        Ok(())
    });
    system.spawn_anonymous(doubler).unwrap()
}

/// The panic text of `f`, which must panic.
fn failure(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("the expectation should have failed");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_arrive_in_order_on_both_dispatcher_kinds() {
    for system in systems("order") {
        let probe = TestProbe::new(&system);
        let d = doubler(&system, &probe);
        for n in 1..=5 {
            d.tell(n);
        }
        assert_eq!(probe.expect_msg(2), 2);
        assert_eq!(probe.expect_msg_matching(|m| *m == 4), 4);
        assert_eq!(probe.receive_n(3), [6, 8, 10]);
        probe.expect_no_msg(SHORT);
        d.tell(0);
        probe.expect_msg(0);
        probe.expect_terminated(&d);
        system.terminate().await;
    }
}

#[test]
fn a_failed_expectation_names_what_arrived_or_that_nothing_did() {
    let system = ActorSystem::new("fail-text").unwrap();
    let probe = TestProbe::new(&system);
    let d = doubler(&system, &probe);
    d.tell(3);
    let text = failure(|| {
        probe.expect_msg(7);
    });
    assert!(text.contains("expected 7, got 6"), "{text}");
    let text = failure(|| {
        probe.expect_msg_within(SHORT, 1);
    });
    assert!(text.contains("nothing arrived within 50ms"), "{text}");
    d.tell(5);
    let text = failure(|| probe.expect_no_msg(Duration::from_secs(5)));
    assert!(text.contains("got 10"), "{text}");
    d.tell(1);
    let text = failure(|| {
        probe.expect_msg_matching(|m| *m > 100);
    });
    assert!(text.contains("the message 2 does not match"), "{text}");
    d.tell(1);
    let text = failure(|| {
        probe.receive_n_within(ENOUGH, 2);
    });
    assert!(text.contains("got only 1: [2]"), "{text}");
}

#[test]
fn fishing_skips_keeps_and_fails_as_told() {
    let system = ActorSystem::new("fish").unwrap();
    let probe = TestProbe::new(&system);
    let d = doubler(&system, &probe);
    for n in 1..=6 {
        d.tell(n);
    }
    assert_eq!(probe.fish_for(|m| *m == 6), [6]);
    let kept = probe.fish_for(|m| match m {
        8 => FishingOutcome::Continue,
        12 => FishingOutcome::Complete,
        _ => FishingOutcome::ContinueAndIgnore,
    });
    assert_eq!(kept, [8, 12]);
    d.tell(7);
    let text = failure(|| {
        probe.fish_for(|m| FishingOutcome::Fail(format!("{m} is odd-born")));
    });
    assert!(text.contains("14 is odd-born"), "{text}");
    d.tell(1);
    let text = failure(|| {
        probe.fish_for_within(ENOUGH, |m| *m == 99);
    });
    assert!(
        text.contains("nothing completed") && text.contains("[\"2\"]"),
        "{text}"
    );
}

/// `receive_while` takes what matches and has arrived so far; the first
/// message it does not keep, or a `Terminated`, waits for the next
/// expectation; it ends when the actor goes quiet.
#[test]
fn receive_while_takes_a_series_and_leaves_the_rest() {
    let system = ActorSystem::new("receive-while").unwrap();
    let probe = TestProbe::new(&system);
    let d = doubler(&system, &probe);
    for n in [1, 2, 3, 50, 4] {
        d.tell(n);
    }
    assert_eq!(probe.receive_while(ENOUGH, |m| *m < 100), [2, 4, 6]);
    probe.expect_msg(100);
    assert_eq!(probe.receive_while(ENOUGH, |_| true), [8]);
    // Quiet: nothing, after `idle`.
    assert!(probe
        .receive_while(Duration::from_millis(50), |_| true)
        .is_empty());
    // A Terminated is not a message: it stays for `expect_terminated`.
    probe.watch(&d);
    d.tell(5);
    d.tell(0);
    assert_eq!(probe.receive_while(ENOUGH, |_| true), [10, 0]);
    probe.expect_terminated(&d);
}

#[test]
fn expect_terminated_wants_that_actor_and_fails_on_a_message() {
    let system = ActorSystem::new("terminated").unwrap();
    let probe = TestProbe::new(&system);
    let d = doubler(&system, &probe);
    probe.watch(&d);
    d.tell(4);
    let text = failure(|| {
        probe.expect_terminated_within(ENOUGH, &d);
    });
    assert!(text.contains("got 8"), "{text}");
    let other = doubler(&system, &probe);
    let text = failure(|| {
        probe.expect_terminated_within(SHORT, &other);
    });
    assert!(text.contains("nothing arrived"), "{text}");
    // An actor that is already gone passes at once.
    d.tell(0);
    probe.expect_msg(0);
    probe.expect_terminated(&d);
    let late = TestProbe::<u32>::new(&system);
    late.expect_terminated(&d);
}

#[test]
fn within_bounds_a_block_and_gives_nested_expectations_the_time_left() {
    let system = ActorSystem::new("within").unwrap();
    let probe = TestProbe::new(&system);
    let d = doubler(&system, &probe);
    d.tell(1);
    let got = probe.within(Duration::from_secs(10), || probe.receive_msg());
    assert_eq!(got, 2);
    let text = failure(|| {
        within(SHORT, || probe.expect_no_msg(SHORT * 3));
    });
    assert!(text.contains("longer than its `within` limit"), "{text}");
    // The nested expectation waits only what is left of the 50 ms, not the
    // default 5 s, and says so.
    let text = failure(|| {
        within(SHORT, || {
            probe.receive_msg();
        })
    });
    assert!(text.contains("the time left in `within`"), "{text}");
    // An inner block gets no more than the outer one has left.
    let text = failure(|| {
        within(SHORT, || {
            within(Duration::from_secs(60), || probe.receive_msg())
        });
    });
    let sub_second = ["ms", "µs", "ns"].map(|unit| format!("{unit} (the time left in `within`)"));
    assert!(
        sub_second.iter().any(|t| text.contains(t.as_str())),
        "{text}"
    );
}

#[test]
fn an_event_stream_probe_sees_dead_letters() {
    let system = ActorSystem::new("dead").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let probe = TestProbe::new(&system);
    let d = doubler(&system, &probe);
    d.tell(0);
    probe.expect_msg(0);
    probe.expect_terminated(&d);
    d.tell(1);
    let letter = dead.expect_msg_matching(|l| l.recipient == d.path().to_string());
    assert_eq!(letter.message_type, std::any::type_name::<u32>());
}

#[test]
fn a_dropped_probe_stops_its_actor() {
    let system = ActorSystem::new("drop").unwrap();
    let watcher = TestProbe::<u32>::new(&system);
    let probe = TestProbe::<u32>::new(&system);
    let r = probe.actor_ref();
    drop(probe);
    watcher.expect_terminated(&r);
}

/// Akka's TestProbe order: what a watched actor sent the probe before it
/// ended arrives before its `Terminated`, every time (the probe's own actor
/// makes the watch). Many rounds on both dispatcher kinds, since a watch
/// made elsewhere would lose the race now and then.
#[test]
fn terminated_comes_after_the_dead_actors_last_messages() {
    for system in systems("last-words") {
        for round in 0..100u32 {
            let probe = TestProbe::<u32>::new(&system);
            let d = doubler(&system, &probe);
            probe.watch(&d);
            for n in [round + 1, round + 2, 0] {
                d.tell(n);
            }
            probe.expect_msg((round + 1) * 2);
            probe.expect_msg((round + 2) * 2);
            probe.expect_msg(0);
            probe.expect_terminated(&d);
        }
    }
}

#[test]
fn all_of_takes_any_order_and_any_of_takes_one_of_a_set() {
    for system in systems("all-of") {
        let probe = TestProbe::new(&system);
        let d = doubler(&system, &probe);
        for n in [3, 1, 2, 1] {
            d.tell(n);
        }
        let got = probe.expect_msg_all_of(vec![2, 4, 2, 6]);
        assert_eq!(got, vec![6, 2, 4, 2], "returned in arrival order");
        d.tell(5);
        assert_eq!(probe.expect_msg_any_of(&[8, 10, 12]), 10);
        probe.expect_no_msg(SHORT);

        // A duplicate listed once, and one that never came.
        for n in [1, 1, 4] {
            d.tell(n);
        }
        fails_with("expected also [6], got [2] instead", || {
            probe.expect_msg_all_of(vec![2, 8, 6]);
        });
        d.tell(7);
        fails_with("expected one of [1, 2], got 14", || {
            probe.expect_msg_any_of(&[1, 2]);
        });
    }
}

#[test]
fn await_cond_waits_for_state_and_names_what_never_came() {
    let system = ActorSystem::new("await-cond").unwrap();
    let probe = TestProbe::new(&system);
    let d = doubler(&system, &probe);
    d.tell(0);
    await_cond("the doubler to stop", || d.is_terminated());
    fails_with("waiting for a flag nobody sets", || {
        within(Duration::from_millis(100), || {
            await_cond("a flag nobody sets", || false)
        })
    });
}

/// Asserts that `f` fails with a text containing `needle`.
fn fails_with(needle: &str, f: impl FnOnce()) {
    let text = failure(f);
    assert!(text.contains(needle), "{text}");
}
