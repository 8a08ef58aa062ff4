//! Cases ported from Pekko's event-stream specs, in volley's API: the
//! classic `EventStreamSpec` (actor-tests, org.apache.pekko.event) and the
//! typed `EventStreamSpec` (actor-typed-tests, eventstream). Ported: "manage
//! subscriptions" and typed "unsubscribe subscribers"; typed "register
//! subscribers", "accept published events" and "dispatch events to
//! subscribers of that type"; the sub-channel cases in the form they take
//! with exact-type channels ("update on unsubscribe", "update on
//! unsubscribe all", "subscribe after publish"); "unsubscribe an actor on
//! its termination" (with its "subscribing twice is false"); "unsubscribe
//! the actor, when it subscribes already in terminated state"; the
//! unsubscribe results of "unwatch an actor from unsubscriber when that
//! actor unsubscribes from channels it subscribed"; typed "be subscribed by
//! message adapter for DeadLetter" and "not cause infinite loop when
//! stopping subscribed by message adapter for DeadLetter".
//!
//! Not ported, and why: the null-subscriber cases (a Rust ref cannot be
//! null); "manage log levels" and "be able to log unhandled messages"
//! (volley logs through `tracing`, not the event stream, and publishes no
//! `UnhandledMessage`); the subclass and trait cases ("manage sub-channels
//! using classes", "... (update on subscribe)", "... (update on publish)",
//! "... (unsubscribe classes used with trait)", typed "listen for all
//! subclasses of the events"): volley's channels are exact Rust types, an
//! event goes to the subscribers of its own type only; and the
//! unsubscriber-actor internals ("not allow initializing a
//! TerminatedUnsubscriber twice", the watch/unwatch debug lines), since
//! volley drops terminated subscribers itself when it publishes or
//! subscribes. `DeadLetterSupressionSpec` and `DeadLetterSuspensionSpec`
//! are not ported either: volley has no `DeadLetterSuppression` marker
//! (every undelivered message is a `DeadLetter`) and limits its dead-letter
//! log lines per second (`dead_letters.log_per_second`) rather than
//! suspending them after a count.

use crate::common;

use std::time::Duration;

use common::pekko::Latch;
use volley::{
    ActorRef, ActorSystem, DeadLetter, DeadLetterReason, DispatcherKind, DispatcherSettings, Props,
    Settings,
};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

/// How long a probe listens for an event that must not come.
const QUIET: Duration = Duration::from_millis(200);

#[derive(Debug, Clone, PartialEq)]
struct M(u32);

#[derive(Debug, Clone, PartialEq)]
struct Other(u32);

/// Typed spec's `EventObj`: an event type no-one else publishes.
#[derive(Debug, Clone, PartialEq)]
struct EventObj;

/// Forwards what it gets to a probe.
fn forward(to: ActorRef<M>) -> Props<FnActor<M>> {
    actor_fn(move |_ctx, msg| {
        to.tell(msg);
        Ok(())
    })
}

/// Takes events of two types through two adapters of one actor.
enum Both {
    M(M),
    Other(Other),
}

fn spawn_both(system: &ActorSystem, to: &TestProbe<String>) -> ActorRef<Both> {
    let to = to.actor_ref();
    let both_forward = actor_fn(move |_ctx, msg| {
        to.tell(match msg {
            Both::M(m) => format!("{m:?}"),
            Both::Other(o) => format!("{o:?}"),
        });
        Ok(())
    });
    system.spawn_anonymous(both_forward).unwrap()
}

/// An actor that is already gone.
fn terminated_actor(system: &ActorSystem, name: &str) -> ActorRef<M> {
    let sink = TestProbe::<M>::new(system);
    let to = sink.actor_ref();
    let actor = system.spawn(name, forward(to)).unwrap();
    let watcher = TestProbe::<()>::new(system);
    watcher.watch(&actor);
    system.stop(&actor);
    watcher.expect_terminated(&actor);
    actor
}

/// Classic "manage subscriptions", typed "unsubscribe subscribers".
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_subscriber_gets_events_until_it_unsubscribes() {
    let system = common::system("es-manage").unwrap();
    let probe = TestProbe::<M>::new(&system);
    let es = system.event_stream();

    assert!(es.subscribe(probe.actor_ref()));
    assert!(es.has_subscribers::<M>());
    es.publish(M(42));
    probe.expect_msg(M(42));

    assert!(es.unsubscribe(&probe.actor_ref()));
    assert!(!es.has_subscribers::<M>());
    es.publish(M(13));
    probe.expect_no_msg(QUIET);
    assert!(!es.unsubscribe(&probe.actor_ref()));
    system.terminate().await;
}

/// Typed "register subscribers", "accept published events", "dispatch
/// events to subscribers of that type".
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_event_goes_only_to_the_subscribers_of_its_type() {
    let system = common::system("es-dispatch").unwrap();
    let obj_listener = TestProbe::<EventObj>::on_event_stream(&system);
    let m_listener = TestProbe::<M>::on_event_stream(&system);

    system.event_stream().publish(EventObj);
    obj_listener.expect_msg(EventObj);
    m_listener.expect_no_msg(QUIET);

    system.event_stream().publish(M(1));
    m_listener.expect_msg(M(1));
    obj_listener.expect_no_msg(QUIET);
    system.terminate().await;
}

/// Classic "unsubscribe an actor on its termination", first part: a second
/// subscribe of the same actor is refused and it still gets each event once.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn subscribing_twice_is_refused_and_delivers_each_event_once() {
    let system = common::system("es-twice").unwrap();
    let probe = TestProbe::<M>::new(&system);
    let es = system.event_stream();
    assert!(es.subscribe(probe.actor_ref()));
    assert!(!es.subscribe(probe.actor_ref()));

    es.publish(M(1));
    es.publish(M(2));
    probe.expect_msg(M(1));
    probe.expect_msg(M(2));
    probe.expect_no_msg(QUIET);
    system.terminate().await;
}

/// Sub-channels "(update on unsubscribe)", and the results of "unwatch an
/// actor from unsubscriber when that actor unsubscribes from channels it
/// subscribed": one actor on two channels leaves each on its own.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_actor_on_two_channels_leaves_each_on_its_own() {
    let system = common::system("es-channels").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let actor = spawn_both(&system, &probe);
    let on_m = actor.adapt(Both::M);
    let on_other = actor.adapt(Both::Other);
    let es = system.event_stream();
    assert!(es.subscribe(on_m.clone()));
    assert!(es.subscribe(on_other.clone()));

    assert!(es.unsubscribe(&on_m));
    es.publish(M(1));
    es.publish(Other(2));
    probe.expect_msg("Other(2)".to_string());
    probe.expect_no_msg(QUIET);

    assert!(es.unsubscribe(&on_other));
    es.publish(Other(3));
    probe.expect_no_msg(QUIET);
    assert!(!es.unsubscribe(&on_other));
    assert!(!es.has_subscribers::<Other>());
    system.terminate().await;
}

/// Sub-channels "(update on unsubscribe all)": unsubscribing the actor
/// itself takes it off every channel and leaves the other subscribers.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn unsubscribing_an_actor_from_all_channels_leaves_the_others() {
    let system = common::system("es-all").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let actor = spawn_both(&system, &probe);
    let es = system.event_stream();
    assert!(es.subscribe(actor.adapt(Both::M)));
    assert!(es.subscribe(actor.adapt(Both::Other)));
    let other_m = TestProbe::<M>::on_event_stream(&system);

    assert!(es.unsubscribe_all(&actor));
    es.publish(M(1));
    es.publish(Other(2));
    other_m.expect_msg(M(1));
    probe.expect_no_msg(QUIET);
    assert!(!es.has_subscribers::<Other>());
    assert!(!es.unsubscribe_all(&actor));
    system.terminate().await;
}

/// Sub-channels "(subscribe after publish)": a subscriber gets what is
/// published after it subscribed, and nothing from before.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_late_subscriber_gets_only_later_events() {
    let system = common::system("es-late").unwrap();
    let early = TestProbe::<M>::on_event_stream(&system);
    system.event_stream().publish(M(1));
    early.expect_msg(M(1));

    let late = TestProbe::<M>::on_event_stream(&system);
    system.event_stream().publish(M(2));
    early.expect_msg(M(2));
    late.expect_msg(M(2));
    late.expect_no_msg(QUIET);
    system.terminate().await;
}

/// Classic "unsubscribe an actor on its termination": a terminated
/// subscriber gets nothing and is dropped; the others still get the event.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_terminated_subscriber_is_unsubscribed() {
    let system = common::system("es-terminated").unwrap();
    let forwarded = TestProbe::<M>::new(&system);
    let to = forwarded.actor_ref();
    let target = system.spawn("to-be-killed", forward(to)).unwrap();
    let other = TestProbe::<M>::on_event_stream(&system);
    let es = system.event_stream();
    assert!(es.subscribe(target.clone()));
    es.publish(M(1));
    forwarded.expect_msg(M(1));
    other.expect_msg(M(1));

    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&target);
    system.stop(&target);
    watcher.expect_terminated(&target);
    let dead_before = system.dead_letter_count();
    es.publish(M(2));
    other.expect_msg(M(2));
    forwarded.expect_no_msg(QUIET);
    // Skipped, not sent: publishing to it made no dead letter.
    assert_eq!(system.dead_letter_count(), dead_before);
    // It is no longer on the list.
    assert!(!es.unsubscribe(&target));
    system.terminate().await;
}

/// Classic "unsubscribe the actor, when it subscribes already in terminated
/// state": nothing is kept for it, however often it tries.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_actor_that_subscribes_after_terminating_is_not_kept() {
    let system = common::system("es-subscribe-dead").unwrap();
    let gone = terminated_actor(&system, "to-be-killed");
    let es = system.event_stream();

    assert!(!es.subscribe(gone.clone()));
    assert!(!es.has_subscribers::<M>());
    assert!(!es.subscribe(gone.clone()));
    assert!(!es.has_subscribers::<M>());
    assert!(!es.unsubscribe(&gone));
    system.terminate().await;
}

/// Typed "be subscribed by message adapter for DeadLetter".
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_actor_subscribed_through_a_message_adapter_gets_dead_letters() {
    let system = common::system("es-adapter").unwrap();
    let probe = TestProbe::<String>::new(&system);
    // Reports its dead-letter events, taken through a message adapter it
    // subscribed at start, and echoes its own messages.
    let watcher = actor_fn_with(probe.actor_ref(), |to, _ctx, msg: String| {
        to.tell(msg);
        Ok(())
    })
    .on_start(|_, ctx| {
        let adapter =
            ctx.message_adapter(|d: DeadLetter| format!("{} {:?}", d.recipient, d.reason));
        ctx.system().event_stream().subscribe(adapter);
        Ok(())
    });
    let watcher = system.spawn("watcher", watcher.props()).unwrap();
    // `pre_start` has run, so the adapter is subscribed.
    watcher.tell("init".into());
    probe.expect_msg("init".to_string());

    let dead: Vec<_> = (1..=3)
        .map(|i| terminated_actor(&system, &format!("msg{i}")))
        .collect();
    for actor in &dead {
        actor.tell(M(0));
    }
    for i in 1..=3 {
        probe.expect_msg(format!(
            "volley://es-adapter/user/msg{i} RecipientTerminated"
        ));
    }
    system.terminate().await;
}

enum Cmd {
    Hold(Latch),
    Text(&'static str),
    Dead,
}

/// Subscribes an adapter for `DeadLetter` (whose events it ignores); each
/// `Hold` waits for its latch; "stop" stops it.
fn stops_while_subscribed() -> Props<FnActor<Cmd>> {
    actor_fn_with((), |_, ctx, msg| {
        match msg {
            Cmd::Hold(latch) => latch.wait(),
            Cmd::Text("stop") => ctx.stop_self(),
            Cmd::Text(_) | Cmd::Dead => {}
        }
        Ok(())
    })
    .on_start(|_, ctx| {
        let adapter = ctx.message_adapter(|_: DeadLetter| Cmd::Dead);
        ctx.system().event_stream().subscribe(adapter);
        Ok(())
    })
    .props()
}

/// Typed "not cause infinite loop when stopping subscribed by message
/// adapter for DeadLetter": the messages left in its mailbox become dead
/// letters, published to the stopping actor itself; that must end.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_dead_letter_subscriber_stopping_with_queued_messages_does_not_loop() {
    const BLOCKING: &str = "blocking";
    let mut settings = Settings::default();
    settings.dispatchers.insert(
        BLOCKING.into(),
        DispatcherSettings {
            kind: DispatcherKind::WorkStealing,
            threads: 1,
            ..Default::default()
        },
    );
    // Without draining, so its leftovers are dead letters at once either way.
    settings.drain_on_shutdown = false;
    let system = common::system_with("es-no-loop", settings).unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let actor = system
        .spawn(
            "stopper",
            stops_while_subscribed().with_dispatcher(BLOCKING),
        )
        .unwrap();
    let latch = Latch::new(1);
    actor.tell(Cmd::Hold(latch.clone()));
    actor.tell(Cmd::Text("stop"));
    actor.tell(Cmd::Text("msg2"));
    actor.tell(Cmd::Text("msg3"));
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&actor);
    let before = system.dead_letter_count();
    latch.count_down();

    watcher.expect_terminated(&actor);
    // msg2 and msg3, and perhaps the events about them that reached the
    // stopping actor; then the flow ends.
    let stopper = "volley://es-no-loop/user/stopper".to_string();
    let first = dead.receive_n(2);
    assert!(
        first
            .iter()
            .all(|d| d.recipient == stopper && d.reason == DeadLetterReason::RecipientTerminated),
        "{first:?}"
    );
    let more = dead.receive_while(QUIET, |_| true);
    assert!(more.len() <= 2, "dead letters keep coming: {}", more.len());
    let settled = system.dead_letter_count();
    assert!(settled - before <= 4, "{} dead letters", settled - before);
    dead.expect_no_msg(QUIET);
    assert_eq!(system.dead_letter_count(), settled);
    system.terminate().await;
}

/// Not a Pekko case; found when a port hung: a tell made while publishing
/// may publish again (here an adapter's mapping publishes `M`), and that
/// inner publish drops a stale subscriber of `M`, which writes to the
/// subscriber table. It must not wait behind the outer publish.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_inside_a_publish_that_drops_a_stale_subscriber_completes() {
    let system = common::system("es-nested").unwrap();
    let sink = TestProbe::<M>::new(&system);
    let to = sink.actor_ref();
    let stale = system.spawn("stale", forward(to)).unwrap();
    assert!(system.event_stream().subscribe(stale.clone()));
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&stale);
    system.stop(&stale);
    watcher.expect_terminated(&stale);
    let mapped = TestProbe::<u32>::new(&system);
    let inner = system.clone();
    let adapter = mapped.actor_ref().adapt(move |o: Other| {
        inner.event_stream().publish(M(o.0));
        o.0
    });
    assert!(system.event_stream().subscribe(adapter));
    let (done, finished) = std::sync::mpsc::channel();
    let outer = system.clone();
    std::thread::spawn(move || {
        outer.event_stream().publish(Other(7));
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(20))
        .expect("the outer publish returned");
    mapped.expect_msg(7);
    assert!(
        !system.event_stream().has_subscribers::<M>(),
        "the stale one was dropped"
    );
    system.terminate().await;
}
