//! Apache Pekko's multi-node `classic.RemoteNodeShutdownAndComesBackSpec`
//! (`remote-tests`), "properly reset system message buffer state when new
//! system with same Address comes up", carried over to two in-process
//! nodes: A watches an actor of B; B vanishes without a goodbye while A
//! has a system message for it still unacknowledged (a stop of that
//! actor, sent through a ref without a uid, which names whatever lives at
//! the path); B comes back on the same address with an actor of the same
//! name. A's pending stop was for the old incarnation: it must not stop
//! the new actor, the old watch ends with `Terminated`, and a watch of the
//! new actor (numbered afresh) works to its end; neither node quarantines
//! the other: `a_stop_pending_for_a_vanished_node_does_not_reach_its_next_incarnation`.
//!
//! The rest of the multi-node suite: `RemoteNodeRestartDeathWatchSpec`,
//! `RemoteQuarantinePiercingSpec`, `RemoteGatePiercingSpec`,
//! `RemoteNodeRestartGateSpec`, `artery.RemoteRestartedQuarantinedSpec` and
//! `PiercingShouldKeepQuarantineSpec` (a restarted node is welcome, a
//! quarantined incarnation stays refused) are covered by `control/remote_watch.rs`,
//! `quarantine.rs`, `pekko_remote_watch.rs` and `pekko_lifecycle.rs`;
//! `AttemptSysMsgRedeliverySpec` by `pekko_artery_more.rs`.

use crate::common;

use std::time::{Duration, Instant};

use common::{
    ask_sum, events_so_far, free_port, node, record_events, registry, spawn_calculator, Calc,
    Calculator, Node, T,
};
use volley::{ActorRef, ActorSystem, Props};
use volley_remote::{RemoteSettings, Remoting, RemotingEvent};
use volley_testkit::TestProbe;

fn settings(port: u16) -> RemoteSettings {
    RemoteSettings {
        port,
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        ..RemoteSettings::default()
    }
}

async fn until_answered(calc: &ActorRef<Calc>) {
    let start = Instant::now();
    while ask_sum(calc, Duration::from_millis(500)).await.is_err() {
        assert!(start.elapsed() < T, "no answer from {}", calc.path());
    }
}

fn quarantined(events: &[RemotingEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, RemotingEvent::Quarantined { .. }))
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_pending_for_a_vanished_node_does_not_reach_its_next_incarnation() {
    let port = free_port();
    let a = node("comes-back-a", settings(0)).await;
    let a_events = record_events(&a);
    let b1 = node("comes-back-b", settings(port)).await;
    spawn_calculator(&b1, "subject");
    spawn_calculator(&b1, "barrier");
    let b_path = |name: &str| format!("{}/user/{name}", b1.remoting.address());
    // Refs without a uid: they name whatever lives at the path.
    let subject = a.remoting.resolve::<Calc>(&b_path("subject")).unwrap();
    let barrier = a.remoting.resolve::<Calc>(&b_path("barrier")).unwrap();
    until_answered(&subject).await;
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&subject);
    // Every system message before this one has arrived once its stop is
    // reported.
    probe.watch(&barrier);
    a.system.stop(&barrier);
    probe.expect_terminated_within(T, &barrier);

    // B vanishes without a goodbye; A's stop of the subject waits,
    // unacknowledged, while A tries to reconnect.
    b1.remoting.shutdown();
    b1.system.terminate().await;
    a.system.stop(&subject);

    // B comes back on the same address, its subject there from the start.
    let system = ActorSystem::with_settings("comes-back-b", common::node_settings()).unwrap();
    system
        .spawn("subject", Props::new(Calculator::default))
        .unwrap();
    let remoting = Remoting::start_with(&system, registry(), settings(port))
        .await
        .unwrap();
    let b2 = Node { system, remoting };
    let b2_events = record_events(&b2);

    // The old incarnation's actor is reported gone...
    probe.expect_terminated_within(T, &subject);
    // ...and the new one, at the same path, lives: the pending stop was
    // not for it.
    until_answered(&subject).await;
    assert!(b2.system.lookup("/user/subject").unwrap().is_some());

    // A watch of the new incarnation's actor, numbered afresh, works.
    let probe2 = TestProbe::<u32>::new(&a.system);
    probe2.watch(&subject);
    until_answered(&subject).await;
    a.system.stop(&subject);
    probe2.expect_terminated_within(T, &subject);
    assert!(!quarantined(&events_so_far(&a_events)));
    assert!(!quarantined(&events_so_far(&b2_events)));
    a.system.terminate().await;
    b2.system.terminate().await;
}
