//! Apache Pekko's testkit specs, ported to volley-testkit: the scenarios of
//! typed `TestProbeSpec` / `TestProbeTimeoutSpec` and the javadsl
//! `TestProbeTest` (actor-testkit-typed), and of classic `TestProbeSpec`,
//! `TestTimeSpec`, `DefaultTimeoutSpec` and `PekkoSpecSpec` (testkit).
//! Cases that `tests/probe.rs` or `tests/supervision.rs` already cover are
//! not repeated here.
//!
//! Ported here:
//! - typed: probing for the stop of an actor that stops later; fishing
//!   that times out with nothing arriving; receiving messages one by one,
//!   then no message for the default window; `receiveMessage(max)` failing;
//!   watching a stopped probe within `remainingOrDefault`; the default
//!   timeout; `awaitAssert` passing late and failing; `expectMessageClass`.
//! - classic `TestProbeSpec`: replying to an ask (a future), to a message
//!   and between two probes, through the reply-to ref the message carries
//!   (volley is typed: there is no `sender()`); a child of the supervising
//!   probe (`childActorOf`); the auto-pilot; expecting messages by kind
//!   (`expectMsgType`); ignoring messages; watching with a non-empty queue;
//!   the probe's given and default names; a failing `expectNoMessage`
//!   consuming what it got.
//! - `TestTimeSpec`: dilated time (the failing `awaitCond` waits its whole
//!   limit); `awaitAssert` failing with its last failure; `remaining`
//!   outside `within`. `DefaultTimeoutSpec`: the default timeout follows
//!   the time factor. `PekkoSpecSpec`: terminating the system ends every
//!   actor, the probe's too.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use volley::{ActorRef, ActorSystem, ToAnyRef};
use volley_testkit::{
    actor_fn, await_assert, await_assert_within, await_cond, default_timeout, dilated, remaining,
    remaining_or_default, within, AutoPilot, SupervisorProbe, TestProbe,
};

/// For windows in which nothing is to arrive.
const SHORT: Duration = Duration::from_millis(50);
/// For windows that must hold what is sent in them, yet end a failing
/// expectation.
const ENOUGH: Duration = Duration::from_secs(2);

/// The panic text of `f`, which must panic.
fn failure(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("the expectation should have failed");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Asserts that `f` fails with a text containing `needle`.
fn fails_with(needle: &str, f: impl FnOnce()) {
    let text = failure(f);
    assert!(text.contains(needle), "{text}");
}

/// A request that carries where to answer (volley's stand-in for Akka's
/// `sender()`).
#[derive(Debug)]
struct Greet {
    text: String,
    reply_to: ActorRef<String>,
}

#[test]
fn an_actor_that_stops_on_its_own_timer_later_is_seen_terminated() {
    #[derive(Debug)]
    enum Cmd {
        Arm,
        Fire,
    }
    let delayed = actor_fn(|ctx, cmd| {
        match cmd {
            Cmd::Arm => ctx.schedule_once("stop", Duration::from_millis(300), Cmd::Fire),
            Cmd::Fire => ctx.stop_self(),
        }
        Ok(())
    });
    let system = ActorSystem::new("stop-later").unwrap();
    let probe = TestProbe::<()>::new(&system);
    let actor = system.spawn("delayed", delayed).unwrap();
    actor.tell(Cmd::Arm);
    probe.expect_terminated_within(ENOUGH, &actor);
    assert!(actor.is_terminated());
}

#[test]
fn fishing_with_nothing_arriving_fails_at_its_deadline() {
    let system = ActorSystem::new("fish-nothing").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let calls = AtomicU32::new(0);
    fails_with(
        "nothing completed within 100ms; messages so far: []",
        || {
            probe.fish_for_within(Duration::from_millis(100), |_| {
                calls.fetch_add(1, Ordering::Relaxed);
                true
            });
        },
    );
    assert_eq!(
        calls.load(Ordering::Relaxed),
        0,
        "no message, no fisher call"
    );
}

#[test]
fn receive_msg_takes_each_message_in_turn_then_nothing_more_comes() {
    let system = ActorSystem::new("receive-each").unwrap();
    let probe = TestProbe::<u64>::new(&system);
    for event in 1..=10 {
        probe.actor_ref().tell(event);
        assert_eq!(probe.receive_msg(), event);
    }
    for event in 11..=12 {
        probe.actor_ref().tell(event);
        assert_eq!(probe.receive_msg_within(ENOUGH), event);
    }
    probe.expect_no_msg_default();
    // The default window does catch a message that is there.
    probe.actor_ref().tell(13);
    probe.actor_ref().tell(14);
    probe.expect_msg(13);
    fails_with("got 14", || probe.expect_no_msg_default());
}

#[test]
fn receive_msg_within_fails_when_nothing_comes_in_time() {
    let system = ActorSystem::new("receive-timeout").unwrap();
    let probe = TestProbe::<u64>::new(&system);
    fails_with(
        "expected a message, but nothing arrived within 100ms",
        || {
            probe.receive_msg_within(Duration::from_millis(100));
        },
    );
    // Outside a `_within`, the limit of an enclosing `within` applies.
    fails_with("(the time left in `within`)", || {
        within(Duration::from_millis(100), || probe.receive_msg());
    });
}

#[test]
fn a_stopped_probe_is_seen_terminated_by_another_within_remaining_or_default() {
    let system = ActorSystem::new("stop-probe").unwrap();
    let probe1 = TestProbe::<String>::new(&system);
    let probe2 = TestProbe::<String>::new(&system);
    let ref1 = probe1.actor_ref();
    drop(probe1);
    assert_eq!(probe2.remaining_or_default(), default_timeout());
    within(ENOUGH * 2, || {
        assert!(probe2.remaining_or_default() <= ENOUGH * 2);
        probe2.expect_terminated_within(probe2.remaining_or_default(), &ref1);
    });
}

#[test]
fn the_default_timeout_is_five_seconds_times_the_time_factor() {
    let factor = std::env::var("VOLLEY_TEST_TIME_FACTOR")
        .ok()
        .and_then(|f| f.parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f > 0.0)
        .unwrap_or(1.0);
    assert_eq!(default_timeout(), Duration::from_secs(5).mul_f64(factor));
    assert_eq!(
        dilated(Duration::from_secs(1)),
        Duration::from_secs(1).mul_f64(factor)
    );
    assert_eq!(remaining_or_default(), default_timeout());
}

#[test]
fn await_assert_retries_until_the_check_passes_and_returns_its_value() {
    let tries = AtomicU32::new(0);
    let got = await_assert(|| {
        let n = tries.fetch_add(1, Ordering::Relaxed) + 1;
        assert!(n >= 3, "only {n} tries so far");
        n * 10
    });
    assert_eq!(got, 30);
}

#[test]
fn await_assert_fails_with_the_last_failure_once_its_time_is_up() {
    let start = Instant::now();
    let tries = AtomicU32::new(0);
    fails_with("still failing after 300ms: attempt", || {
        await_assert_within(Duration::from_millis(300), || {
            let n = tries.fetch_add(1, Ordering::Relaxed);
            panic!("attempt {n} sees foo, not bar");
        })
    });
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert!(tries.load(Ordering::Relaxed) >= 2, "it tried again");
}

#[test]
fn a_failing_await_cond_waits_its_whole_limit() {
    let start = Instant::now();
    fails_with("waiting for never", || {
        within(Duration::from_millis(200), || await_cond("never", || false));
    });
    assert!(start.elapsed() >= Duration::from_millis(200));
}

#[test]
fn remaining_outside_within_fails_and_inside_counts_down() {
    fails_with("`remaining` may only be called inside `within`", || {
        remaining();
    });
    within(Duration::from_secs(30), || {
        let outer = remaining();
        assert!(outer <= Duration::from_secs(30));
        within(Duration::from_secs(60), || {
            assert!(remaining() <= outer, "no more than the outer block has");
        });
        // Past the deadline: nothing left (the block then fails as late).
        fails_with("longer than its `within` limit", || {
            within(Duration::from_millis(1), || {
                std::thread::sleep(Duration::from_millis(5));
                assert_eq!(remaining(), Duration::ZERO);
            })
        });
    });
}

#[derive(Debug, PartialEq)]
enum Reply {
    Count(u32),
    Name(String),
}

#[test]
fn expect_msg_pf_takes_a_message_of_the_expected_kind_and_returns_its_content() {
    let system = ActorSystem::new("by-kind").unwrap();
    let probe = TestProbe::<Reply>::new(&system);
    for _ in 0..3 {
        probe.actor_ref().tell(Reply::Count(42));
    }
    let n = probe.expect_msg_pf(|m| match m {
        Reply::Count(n) => Some(n),
        _ => None,
    });
    assert_eq!(n, 42);
    probe.expect_msg_matching(|m| matches!(m, Reply::Count(_)));
    let n = probe.expect_msg_pf_within(ENOUGH, |m| match m {
        Reply::Count(n) => Some(n),
        _ => None,
    });
    assert_eq!(n, 42);
    probe.actor_ref().tell(Reply::Name("x".into()));
    fails_with("the message Name(\"x\") does not match", || {
        probe.expect_msg_pf(|m| match m {
            Reply::Count(n) => Some(n),
            _ => None,
        });
    });
}

#[test]
fn the_test_answers_an_ask_through_the_reply_to_the_probe_received() {
    let system = ActorSystem::new("reply-future").unwrap();
    let probe = TestProbe::<Greet>::new(&system);
    let to = probe.actor_ref();
    let rt = system.runtime_handle();
    let answer = rt.spawn(async move {
        to.ask(
            |reply_to| Greet {
                text: "hello".into(),
                reply_to,
            },
            Duration::from_secs(10),
        )
        .await
    });
    let greet = probe.expect_msg_matching(|g| g.text == "hello");
    greet.reply_to.tell("world".into());
    assert_eq!(rt.block_on(answer).unwrap().unwrap(), "world");
}

#[test]
fn the_test_answers_a_message_to_the_ref_it_names() {
    let system = ActorSystem::new("reply-msg").unwrap();
    let tk1 = TestProbe::<Greet>::new(&system);
    let tk2 = TestProbe::<String>::new(&system);
    tk1.actor_ref().tell(Greet {
        text: "hello".into(),
        reply_to: tk2.actor_ref(),
    });
    let greet = tk1.expect_msg_matching(|g| g.text == "hello");
    assert_eq!(greet.reply_to, tk2.actor_ref());
    greet.reply_to.tell("world".into());
    tk2.expect_msg("world".into());
}

#[test]
fn two_probes_send_and_answer_each_other() {
    let system = ActorSystem::new("reply-probes").unwrap();
    let probe1 = TestProbe::<String>::new(&system);
    let probe2 = TestProbe::<Greet>::new(&system);
    probe2.actor_ref().tell(Greet {
        text: "hello".into(),
        reply_to: probe1.actor_ref(),
    });
    let greet = probe2.receive_msg();
    assert_eq!(greet.text, "hello");
    greet.reply_to.tell(format!("{} back", greet.text));
    probe1.expect_msg("hello back".into());
}

#[test]
fn a_supervising_probe_spawns_children_under_itself_with_the_given_name() {
    let echo = actor_fn(|_ctx, g: Greet| {
        g.reply_to.tell(g.text);
        Ok(())
    });
    let system = ActorSystem::new("child-of").unwrap();
    let parent = SupervisorProbe::new(&system);
    let child = parent.spawn("actorName", echo);
    assert_eq!(child.path().name(), "actorName");
    let under = format!("{}/actorName", parent.parent().path().elements());
    assert_eq!(child.path().elements(), under);
    let probe = TestProbe::new(&system);
    child.tell(Greet {
        text: "echo".into(),
        reply_to: probe.actor_ref(),
    });
    probe.expect_msg("echo".to_string());
}

#[test]
fn an_auto_pilot_passes_messages_on_until_it_stops_itself() {
    let system = ActorSystem::new("autopilot").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let test_actor = TestProbe::<String>::new(&system);
    let forward = test_actor.actor_ref();
    probe.set_auto_pilot(move |m: &String| {
        if m == "stop" {
            AutoPilot::Stop
        } else {
            forward.tell(m.clone());
            AutoPilot::KeepRunning
        }
    });
    for m in ["hallo", "welt", "stop"] {
        probe.actor_ref().tell(m.into());
    }
    test_actor.expect_msg("hallo".into());
    test_actor.expect_msg("welt".into());
    // The probe still sees every message, "stop" included.
    probe.expect_msg("hallo".into());
    probe.expect_msg("welt".into());
    probe.expect_msg("stop".into());
    probe.actor_ref().tell("hallo".into());
    probe.expect_msg("hallo".into());
    // Had the pilot forwarded that "hallo", it would be ahead of "end".
    test_actor.actor_ref().tell("end".into());
    test_actor.expect_msg("end".into());
}

#[test]
fn an_auto_pilot_answers_asks_made_of_the_probe() {
    let system = ActorSystem::new("autopilot-ask").unwrap();
    let probe = TestProbe::<Greet>::new(&system);
    probe.set_auto_pilot(|g: &Greet| {
        g.reply_to.tell(g.text.to_uppercase());
        AutoPilot::KeepRunning
    });
    let to = probe.actor_ref();
    let rt = system.runtime_handle();
    let answer = rt.block_on(async move {
        to.ask(
            |reply_to| Greet {
                text: "quiet".into(),
                reply_to,
            },
            Duration::from_secs(10),
        )
        .await
    });
    assert_eq!(answer.unwrap(), "QUIET");
    probe.expect_msg_matching(|g| g.text == "quiet");
    probe.clear_auto_pilot();
    let answers = TestProbe::<String>::new(&system);
    probe.actor_ref().tell(Greet {
        text: "again".into(),
        reply_to: answers.actor_ref(),
    });
    probe.expect_msg_matching(|g| g.text == "again");
    // Had a pilot answered, its answer would be ahead of "end".
    answers.actor_ref().tell("end".into());
    answers.expect_msg("end".into());
}

/// An actor that takes strings and does nothing with them.
fn sink(system: &ActorSystem) -> ActorRef<String> {
    system
        .spawn_anonymous(actor_fn(|_ctx, _: String| Ok(())))
        .unwrap()
}

#[test]
fn ignored_messages_never_reach_the_test_until_ignoring_ends() {
    let system = ActorSystem::new("ignore").unwrap();
    let probe = TestProbe::<u32>::new(&system);
    probe.ignore_msg(|m| *m == 42);
    probe.actor_ref().tell(42);
    probe.actor_ref().tell(7);
    probe.expect_msg(7);
    probe.ignore_no_msg();
    probe.actor_ref().tell(42);
    probe.expect_msg(42);
}

#[test]
fn a_watch_made_with_messages_queued_delivers_them_first() {
    let system = ActorSystem::new("watch-queued").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let target = system.spawn_anonymous(actor_fn(|_ctx, ()| Ok(()))).unwrap();
    system.stop(&target);
    probe.actor_ref().tell("hello".into());
    probe.watch(&target);
    probe.expect_msg_within(ENOUGH, "hello".into());
    let t = probe.expect_terminated_within(ENOUGH, &target);
    assert_eq!(t.actor, target.to_any_ref());
}

#[test]
fn a_probe_has_the_name_it_is_given_or_a_test_probe_name() {
    let system = ActorSystem::new("names").unwrap();
    let named = TestProbe::<u32>::named(&system, "worker");
    assert_eq!(named.actor_ref().path().name(), "worker");
    let unnamed = TestProbe::<u32>::new(&system);
    let name = unnamed.actor_ref().path().name().to_string();
    assert!(name.starts_with("test-probe-"), "{name}");
    assert_eq!(
        unnamed.actor_ref().path().elements(),
        format!("/user/{name}")
    );
}

#[test]
fn a_failing_expect_no_msg_consumes_the_message_it_got() {
    let system = ActorSystem::new("pull").unwrap();
    let probe = TestProbe::<String>::new(&system);
    probe.actor_ref().tell("nein".into());
    probe.actor_ref().tell("nie".into());
    let failures = AtomicU32::new(0);
    await_assert(|| {
        failures.fetch_add(1, Ordering::Relaxed);
        probe.expect_no_msg(SHORT);
    });
    assert!(failures.load(Ordering::Relaxed) >= 3, "two failed tries");
    probe.actor_ref().tell("tak".into());
    probe.expect_msg("tak".into());
}

#[test]
fn receive_one_returns_a_message_or_none_without_failing() {
    let system = ActorSystem::new("receive-one").unwrap();
    let probe = TestProbe::<u32>::new(&system);
    assert_eq!(probe.receive_one(SHORT), None);
    probe.actor_ref().tell(5);
    assert_eq!(probe.receive_one(ENOUGH), Some(5));
    assert_eq!(probe.receive_one(Duration::ZERO), None);
}

#[test]
fn terminating_the_system_ends_every_actor_and_the_probe() {
    let system = ActorSystem::new("terminate-all").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let actor = sink(&system);
    let refs = [probe.actor_ref(), actor.clone()];
    assert!(refs.iter().all(|r| !r.is_terminated()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(system.terminate());
    await_cond("every actor to end", || {
        refs.iter().all(|r| r.is_terminated())
    });
}
