//! Apache Pekko's multi-node `RemoteNodeDeathWatchSpec` (`remote-tests`),
//! carried over to two in-process nodes. Pekko checks that a watch leaves
//! nothing behind by asking its `RemoteWatcher` for empty stats
//! ("heartbeating is stopped"); volley shows the same through idleness: an
//! association with a remote watch either way keeps running, one with none
//! is stopped after `stop_idle_outbound_after`
//! (docs/reference/remoting.md#idle-associations). So each case ends by
//! waiting for both
//! nodes' associations to stop (`Idle`, or removed once nothing refers to
//! them): a watch entry left behind on either node would keep them
//! `Active` for ever.
//!
//! - "receive Terminated when remote actor is stopped" (and its cleanup):
//!   `a_stopped_remote_actor_is_reported_and_leaves_no_watch_behind`.
//! - "cleanup after watch/unwatch":
//!   `a_watch_withdrawn_leaves_nothing_behind`.
//! - "cleanup after bi-directional watch/unwatch":
//!   `watches_both_ways_withdrawn_leave_nothing_behind`.
//! - "cleanup after bi-directional watch/stop/unwatch" (one watch
//!   withdrawn, then both subjects stopped; only the other watcher told):
//!   `a_withdrawn_watch_and_a_stopped_subject_leave_nothing_behind`.
//! - "cleanup after stop" (the watchers stop, on both nodes, while they
//!   watch): `watchers_that_stop_withdraw_their_watches_both_ways`.
//!
//! Skipped, with the reason: the "fast"/"slow" scenarios differ by a sleep
//! between the steps, which adds nothing here (each step waits for its
//! effect). "receive Terminated when watched node crash" and "cleanup when
//! watching node crash": covered by `control/remote_watch.rs` (a node that goes
//! silent), `pekko_remote_watch.rs` (several watchers and a partial
//! unwatch) and `pekko_remote_deploy_more.rs` (peers that watch and leave
//! leave no association behind).

use crate::common;

use std::time::{Duration, Instant};

use common::{add, node, remote_ref, spawn_calculator, Calc, Node, T};
use volley::{Actor, ActorRef, AnyRef, Context, HandleResult, Props, Terminated, ToAnyRef};
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::{AssociationState, RemoteSettings};
use volley_testkit::TestProbe;

/// Associations stopped after 400 ms with nothing but heartbeats (every
/// 50 ms); a detector patient enough not to take a busy machine's pauses
/// for a crash.
fn idling() -> RemoteSettings {
    RemoteSettings {
        failure_detector: FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(50),
            acceptable_heartbeat_pause: Duration::from_millis(3000),
            ..FailureDetectorSettings::default()
        },
        stop_idle_outbound_after: Duration::from_millis(400),
        ..RemoteSettings::default()
    }
}

async fn pair() -> (Node, Node) {
    (
        node("watch-a", idling()).await,
        node("watch-b", idling()).await,
    )
}

fn stopped(state: Option<AssociationState>) -> bool {
    matches!(state, None | Some(AssociationState::Idle))
}

/// Waits until both nodes' associations with each other have stopped for
/// idleness: no watch is left on either side.
async fn assert_cleanup(a: &Node, b: &Node) {
    let start = Instant::now();
    loop {
        let ab = a.remoting.association_state(b.remoting.address());
        let ba = b.remoting.association_state(a.remoting.address());
        if stopped(ab) && stopped(ba) {
            return;
        }
        assert!(
            start.elapsed() < T,
            "still running after every watch ended: A→B {ab:?}, B→A {ba:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A watcher that can itself be stopped: watches what it is told to, and
/// passes the `Terminated` it gets on as the dead actor's path.
struct Watcher(tokio::sync::mpsc::UnboundedSender<String>);

impl Actor for Watcher {
    type Msg = AnyRef;
    fn handle(&mut self, ctx: &mut Context<Self>, target: AnyRef) -> HandleResult {
        ctx.watch(&target);
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let _ = self.0.send(t.actor.path().to_string());
        Ok(())
    }
}

fn stop_local(n: &Node, name: &str) {
    let actor = n.system.lookup(&format!("/user/{name}")).unwrap().unwrap();
    n.system.stop(&actor);
}

/// Until `calc` answers: the nodes are associated both ways.
async fn talk(calc: &ActorRef<Calc>) {
    assert_eq!(add(calc, 1, 1).await, 2);
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_remote_actor_is_reported_and_leaves_no_watch_behind() {
    let (a, b) = pair().await;
    spawn_calculator(&b, "subject1");
    let subject = remote_ref(&a, &b, "subject1");
    talk(&subject).await;
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&subject);
    // The watch is in place: the association stays up past the idle time.
    probe.expect_no_msg(Duration::from_millis(800));
    assert_eq!(
        a.remoting.association_state(b.remoting.address()),
        Some(AssociationState::Active)
    );
    stop_local(&b, "subject1");
    probe.expect_terminated_within(T, &subject);
    assert_cleanup(&a, &b).await;
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_withdrawn_leaves_nothing_behind() {
    let (a, b) = pair().await;
    spawn_calculator(&b, "subject2");
    let subject = remote_ref(&a, &b, "subject2");
    talk(&subject).await;
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&subject);
    talk(&subject).await;
    probe.unwatch(&subject);
    assert_cleanup(&a, &b).await;
    // Withdrawn: its end is not reported.
    stop_local(&b, "subject2");
    probe.expect_no_msg(Duration::from_millis(300));
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_both_ways_withdrawn_leave_nothing_behind() {
    let (a, b) = pair().await;
    spawn_calculator(&a, "subject3");
    spawn_calculator(&b, "subject3");
    let on_b = remote_ref(&a, &b, "subject3");
    let on_a = remote_ref(&b, &a, "subject3");
    talk(&on_b).await;
    talk(&on_a).await;
    let probe_a = TestProbe::<u32>::new(&a.system);
    let probe_b = TestProbe::<u32>::new(&b.system);
    probe_a.watch(&on_b);
    probe_b.watch(&on_a);
    talk(&on_b).await;
    talk(&on_a).await;
    probe_a.unwatch(&on_b);
    probe_b.unwatch(&on_a);
    assert_cleanup(&a, &b).await;
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_watch_and_a_stopped_subject_leave_nothing_behind() {
    let (a, b) = pair().await;
    spawn_calculator(&b, "s1");
    spawn_calculator(&b, "s2");
    let s1 = remote_ref(&a, &b, "s1");
    let s2 = remote_ref(&a, &b, "s2");
    talk(&s1).await;
    let w1 = TestProbe::<u32>::new(&a.system);
    let w2 = TestProbe::<u32>::new(&a.system);
    w1.watch(&s1);
    w2.watch(&s2);
    talk(&s2).await;
    w1.unwatch(&s1);
    talk(&s1).await;
    stop_local(&b, "s1");
    stop_local(&b, "s2");
    w2.expect_terminated_within(T, &s2);
    w1.expect_no_msg(Duration::from_millis(300));
    assert_cleanup(&a, &b).await;
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_that_stop_withdraw_their_watches_both_ways() {
    let (a, b) = pair().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let subject_a = spawn_calculator(&a, "a2");
    let subject_b = spawn_calculator(&b, "b2");
    let on_b = remote_ref(&a, &b, "b2");
    let on_a = remote_ref(&b, &a, "a2");
    talk(&on_b).await;
    talk(&on_a).await;
    let watcher_a = a
        .system
        .spawn(
            "watcher-a",
            Props::new({
                let tx = tx.clone();
                move || Watcher(tx.clone())
            }),
        )
        .unwrap();
    let watcher_b = b
        .system
        .spawn("watcher-b", Props::new(move || Watcher(tx.clone())))
        .unwrap();
    watcher_a.tell(on_b.to_any_ref());
    watcher_b.tell(on_a.to_any_ref());
    talk(&on_b).await;
    talk(&on_a).await;
    // The watchers stop while they watch; their watches go with them.
    a.system.stop(&watcher_a);
    b.system.stop(&watcher_b);
    assert_cleanup(&a, &b).await;
    // The subjects' ends reach nobody.
    a.system.stop(&subject_a);
    b.system.stop(&subject_b);
    // A window for a wrong notice to arrive (what is checked).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rx.try_recv().is_err(), "a stopped watcher was told");
    a.system.terminate().await;
    b.system.terminate().await;
}
