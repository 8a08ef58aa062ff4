//! A ref from `resolve` has no uid: like Akka's actor selection, each of
//! its messages is for whatever actor lives at its path when the message
//! arrives, on the same connection, however the actors there come and go.
//! A ref with a uid stays with its incarnation (Akka's rule). Pekko's
//! `RemotingSpec`, "not send to remote re-created actor with same name",
//! checks both halves; its selection half, and the path sent to before its
//! actor existed, used to be dead letters until the connection was
//! replaced (the receiver kept the actor the path named when the ref was
//! first declared).
use crate::common;

use common::tagged::Forward;

use std::time::Duration;

use common::{eventually, node_settings, registry, spawn_calculator, Calc, Calculator, Node, T};
use volley::{ActorRef, ActorSystem, AskError, Props};
use volley_remote::{RemoteSettings, Remoting};
use volley_testkit::TestProbe;

/// The wire id of `ActorRef<Calc>`, for a calculator to be sent by its
/// own node with its uid.
const CALC_REF_ID: u32 = 200;

async fn node(name: &str) -> Node {
    let mut registry = registry();
    registry.register::<ActorRef<Calc>>(CALC_REF_ID).unwrap();
    let system = ActorSystem::with_settings(name, node_settings()).unwrap();
    let remoting = Remoting::start_with(&system, registry, RemoteSettings::default())
        .await
        .unwrap();
    Node { system, remoting }
}

/// A probe on `n` and a ref that feeds it, fit to travel in a message.
fn probe<T: Send + std::fmt::Debug + 'static>(n: &Node, name: &str) -> (TestProbe<T>, ActorRef<T>) {
    let probe = TestProbe::<T>::new(&n.system);
    let to = probe.actor_ref();
    let forward = n
        .system
        .spawn(name, Props::new(move || Forward(to.clone())))
        .unwrap();
    (probe, forward)
}

fn path(n: &Node, name: &str) -> String {
    format!("{}/user/{name}", n.remoting.address())
}

fn add(a: i64, b: i64, reply_to: &ActorRef<i64>) -> Calc {
    Calc::Add {
        a,
        b,
        reply_to: reply_to.clone(),
    }
}

/// A calculator spawned at `/user/calc` on `b`, and two refs to it on
/// `a`: its path resolved, and its own ref, with its uid, as its node
/// sends it.
async fn calc_by_path_and_by_uid(
    a: &Node,
    b: &Node,
) -> (ActorRef<Calc>, ActorRef<Calc>, ActorRef<Calc>) {
    let (refs, _collector) = probe::<ActorRef<Calc>>(a, "collector");
    let actor = spawn_calculator(b, "calc");
    let selection = a.remoting.resolve::<Calc>(&path(b, "calc")).unwrap();
    assert_eq!(common::add(&selection, 1, 1).await, 2);
    b.remoting
        .resolve::<ActorRef<Calc>>(&path(a, "collector"))
        .unwrap()
        .tell(actor.clone());
    let with_uid = refs.receive_msg_within(T);
    assert_eq!(with_uid.path().to_string(), path(b, "calc"));
    (actor, selection, with_uid)
}

/// Stops `/user/{name}` on `n` and spawns a new calculator there once the
/// name is free.
async fn replace(n: &Node, old: &ActorRef<Calc>, name: &str) -> ActorRef<Calc> {
    n.system.stop(old);
    spawn_when_free(n, name).await
}

/// Spawns a calculator at `/user/{name}` on `n` once the name is free (a
/// stopped actor's name is reserved until it has terminated).
async fn spawn_when_free(n: &Node, name: &str) -> ActorRef<Calc> {
    let mut new = None;
    eventually("the name to be free again", || {
        new = n.system.spawn(name, Props::new(Calculator::default)).ok();
        new.is_some()
    })
    .await;
    new.unwrap()
}

/// Waits until `n` counted more dead letters than `before`.
async fn dead_letter_after(n: &Node, before: u64, what: &str) {
    eventually(what, || n.system.dead_letter_count() > before).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_resolved_before_its_actor_exists_reaches_it_once_spawned() {
    let (a, b) = (node("alpha").await, node("beta").await);
    let (sums, reply) = probe::<i64>(&a, "sums");
    let late = a.remoting.resolve::<Calc>(&path(&b, "late")).unwrap();
    let before = b.system.dead_letter_count();
    late.tell(add(1, 1, &reply));
    dead_letter_after(
        &b,
        before,
        "the message to nobody to be a dead letter on beta",
    )
    .await;
    sums.expect_no_msg(Duration::from_millis(100));

    spawn_calculator(&b, "late");
    late.tell(add(2, 3, &reply));
    sums.expect_msg_within(T, 5);
    assert_eq!(common::add(&late, 4, 4).await, 8, "an ask as well");
    stop(a, b).await;
}

/// The selection half reaches each new incarnation, by tell and by ask;
/// a ref with the first incarnation's uid, used on the same connection in
/// between, reaches none of them.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_reaches_each_new_actor_of_its_name_and_a_uid_only_its_own() {
    let (a, b) = (node("alpha").await, node("beta").await);
    let (sums, reply) = probe::<i64>(&a, "sums");
    let (first, selection, with_uid) = calc_by_path_and_by_uid(&a, &b).await;
    with_uid.tell(add(10, 10, &reply));
    sums.expect_msg_within(T, 20);

    let mut current = first;
    for round in 1..=2 {
        current = replace(&b, &current, "calc").await;
        let before = b.system.dead_letter_count();
        with_uid.tell(add(100, round, &reply));
        dead_letter_after(
            &b,
            before,
            "the old incarnation's message to be a dead letter",
        )
        .await;
        // Sent after the one through the uid: had that one reached the new
        // actor, its sum would come first.
        selection.tell(add(round, 0, &reply));
        sums.expect_msg_within(T, round);
        assert_eq!(common::add(&selection, round, round).await, 2 * round);
    }
    sums.expect_no_msg(Duration::from_millis(100));
    stop(a, b).await;
}

/// A path whose actor comes and goes several times, with messages sent
/// while nobody is there: each is a dead letter on the receiving node, and
/// each sent while an actor lives reaches it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_with_nobody_there_for_a_while_is_dead_letters_then_the_next_actor() {
    let (a, b) = (node("alpha").await, node("beta").await);
    let (sums, reply) = probe::<i64>(&a, "sums");
    let selection = a.remoting.resolve::<Calc>(&path(&b, "calc")).unwrap();
    for round in 1..=3 {
        let before = b.system.dead_letter_count();
        for _ in 0..10 {
            selection.tell(add(-1, 0, &reply));
        }
        eventually("ten messages to nobody to be dead letters", || {
            b.system.dead_letter_count() >= before + 10
        })
        .await;
        let actor = spawn_when_free(&b, "calc").await;
        for i in 0..100 {
            selection.tell(add(round, i, &reply));
        }
        for i in 0..100 {
            sums.expect_msg_within(T, round + i);
        }
        b.system.stop(&actor);
        eventually("the actor to be gone", || actor.is_terminated()).await;
    }
    sums.expect_no_msg(Duration::from_millis(100));
    stop(a, b).await;
}

/// System messages through a path follow it too: a watch or a stop sent
/// through the ref reaches the actor living at the path when it arrives,
/// whether nobody or another actor was there when the ref was first
/// declared on the control lane. Each watch ends with one `Terminated`,
/// when that actor stops. They used to reach what the path named at that
/// first declaration, so a later watch ended at once and a stop was lost.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_and_a_stop_through_a_path_reach_the_actor_there_now() {
    let (a, b) = (node("alpha").await, node("beta").await);
    let selection = a.remoting.resolve::<Calc>(&path(&b, "calc")).unwrap();
    let watcher = TestProbe::<()>::new(&a.system);
    // Nobody there: the watch ends at once.
    watcher.expect_terminated_within(T, &selection);
    for _ in 0..2 {
        let actor = watch_the_next_actor(&b, &watcher, &selection).await;
        assert!(a.system.stop(&selection), "the stop is sent");
        watcher.expect_terminated_within(T, &selection);
        eventually("the actor to stop", || actor.is_terminated()).await;
        watcher.expect_no_msg(Duration::from_millis(100));
    }
    // An unwatch reaches the actor there now as well; the stop goes
    // behind it, on the same lane.
    let actor = watch_the_next_actor(&b, &watcher, &selection).await;
    watcher.unwatch(&selection);
    a.system.stop(&selection);
    eventually("the last actor to stop", || actor.is_terminated()).await;
    watcher.expect_no_msg(Duration::from_millis(300));
    stop(a, b).await;
}

/// Spawns a calculator at the path of `selection` (on `b`) and watches it
/// through `selection`: no `Terminated` comes while it lives.
async fn watch_the_next_actor(
    b: &Node,
    watcher: &TestProbe<()>,
    selection: &ActorRef<Calc>,
) -> ActorRef<Calc> {
    let actor = spawn_when_free(b, "calc").await;
    watcher.watch(selection);
    watcher.expect_no_msg(Duration::from_millis(300));
    assert!(!actor.is_terminated(), "the watch stopped nothing");
    actor
}

/// A path whose actor died under a watch is not dead: its asks are sent,
/// and reach the next actor there (Akka's selection has no end). A ref
/// with the dead actor's uid is dead for good: its asks fail at once, as
/// Akka's do. The path used to be remembered dead until its node
/// restarted, so every ask through it failed at once although tells
/// reached the new actor.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_watched_to_its_end_is_asked_again_and_the_uid_is_not() {
    let (a, b) = (node("alpha").await, node("beta").await);
    let (_, selection, with_uid) = calc_by_path_and_by_uid(&a, &b).await;
    let (by_path, by_uid) = (
        TestProbe::<()>::new(&a.system),
        TestProbe::<()>::new(&a.system),
    );
    by_path.watch(&selection);
    by_uid.watch(&with_uid);
    // Sent after both watches, on the same lane: it arrives after them.
    assert!(a.system.stop(&with_uid));
    by_path.expect_terminated_within(T, &selection);
    by_uid.expect_terminated_within(T, &with_uid);

    assert!(with_uid.is_terminated(), "the incarnation is known dead");
    let ask_one =
        |calc: ActorRef<Calc>| async move { calc.ask(|reply_to| add(1, 1, &reply_to), T).await };
    assert!(matches!(
        ask_one(with_uid.clone()).await,
        Err(AskError::RecipientTerminated(_))
    ));
    spawn_when_free(&b, "calc").await;
    assert_eq!(common::add(&selection, 2, 3).await, 5, "the path's ask");
    let again = a.remoting.resolve::<Calc>(&path(&b, "calc")).unwrap();
    assert_eq!(common::add(&again, 3, 3).await, 6, "resolved again");
    assert!(!selection.is_terminated(), "the path is not known dead");
    assert!(
        matches!(
            ask_one(with_uid).await,
            Err(AskError::RecipientTerminated(_))
        ),
        "the old uid stays dead"
    );
    stop(a, b).await;
}

async fn stop(a: Node, b: Node) {
    a.system.terminate().await;
    b.system.terminate().await;
}
