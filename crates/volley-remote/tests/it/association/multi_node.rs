//! Cases of Apache Pekko's multi-node remoting suite (`remote-tests`),
//! carried over to in-process nodes:
//!
//! - `RemoteDeliverySpec`, "not drop messages under normal circumstances":
//!   letters routed through postmen on three nodes (A → B → C → B → C →
//!   back to A), one at a time and then all at once, arrive, and in order:
//!   `letters_routed_across_three_nodes_all_arrive_in_order`. A documented
//!   difference: B reaches C, named only in A's letters, because the nodes
//!   set `trust.dial_declared_nodes` (Akka's behaviour; volley's default
//!   refuses to dial a node a peer names, and the letters would be dead
//!   letters on B).
//! - `TransportFailSpec`, "reconnect", and `classic.Ticket15109Spec`,
//!   "not be introduced during normal errors": every connection to a node
//!   fails while a watch is in place; the lanes reconnect, nothing is
//!   quarantined, the old watch still ends with `Terminated` (once), and a
//!   new actor is watched and answers:
//!   `failed_connections_reconnect_without_quarantine_and_keep_watches`.
//! - `RemoteDeploymentDeathWatchSpec`, "be able to shutdown when remote
//!   node crash": a node that spawned an actor on a node that then
//!   crashes learns of its end and terminates:
//!   `a_node_whose_remotely_spawned_actor_died_with_its_node_terminates`.
//!
//! Skipped, with the reason: `NewRemoteActorSpec` (covered by
//! `pekko_remote_deploy.rs` and `remote_messaging.rs`: an actor spawned on
//! another node answers through its ref); `RemoteReDeploymentSpec` and
//! the remote pools of `routing.RemoteRoundRobinSpec`, `RemoteRandomSpec`,
//! `RemoteScatterGatherSpec`: volley has no remote supervision and no
//! remotely deployed pools (docs/semantics.md#not-yet); the
//! round-robin group over remote paths is covered by
//! `pekko_remote_deploy.rs`. `LookupRemoteActorSpec`: selections by path,
//! covered by `pekko_remote_delivery.rs`. The node-restart specs: see
//! `pekko_node_comes_back.rs`.

use crate::common;

use common::relay::Relay;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};
use volley_remote::{RemoteSettings, Remoting, RemotingEvent};
use volley_testkit::TestProbe;

use common::{
    ask_sum, events_so_far, free_port, node, record_events, remote_ref, spawn_calculator, Calc,
    Node, T,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Letter {
    n: u32,
    route: Vec<ActorRef<Letter>>,
}

/// Sends each letter to the first stop of its route, with the rest.
struct Postman;

impl Actor for Postman {
    type Msg = Letter;
    fn handle(&mut self, _ctx: &mut Context<Self>, mut letter: Letter) -> HandleResult {
        if !letter.route.is_empty() {
            let next = letter.route.remove(0);
            next.tell(letter);
        }
        Ok(())
    }
}

/// Hands every letter to the test.
struct Mailbox(tokio::sync::mpsc::UnboundedSender<Letter>);

impl Actor for Mailbox {
    type Msg = Letter;
    fn handle(&mut self, _ctx: &mut Context<Self>, letter: Letter) -> HandleResult {
        let _ = self.0.send(letter);
        Ok(())
    }
}

async fn postal_node(name: &str) -> Node {
    let system = ActorSystem::with_settings(name, common::node_settings()).unwrap();
    let mut registry = common::registry();
    registry.register::<Letter>(120).unwrap();
    // B hands letters to C, a node only A's letters name: Akka dials it;
    // volley does so only when told (the trust rules,
    // docs/reference/remote-security.md#differences-from-akka-remoting).
    let settings = RemoteSettings {
        trust: volley_remote::transport::TrustSettings {
            dial_declared_nodes: true,
            ..Default::default()
        },
        ..RemoteSettings::default()
    };
    let remoting = Remoting::start_with(&system, registry, settings)
        .await
        .unwrap();
    system.spawn("postman", Props::new(|| Postman)).unwrap();
    Node { system, remoting }
}

async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Letter>, what: &str) -> Letter {
    match tokio::time::timeout(T, rx.recv()).await {
        Ok(Some(letter)) => letter,
        _ => panic!("a letter was lost ({what})"),
    }
}

fn postman(from: &Node, on: &Node) -> ActorRef<Letter> {
    from.remoting
        .resolve(&format!("{}/user/postman", on.remoting.address()))
        .unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn letters_routed_across_three_nodes_all_arrive_in_order() {
    let a = postal_node("postal-a").await;
    let b = postal_node("postal-b").await;
    let c = postal_node("postal-c").await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mailbox = a
        .system
        .spawn("mailbox", Props::new(move || Mailbox(tx.clone())))
        .unwrap();
    let p1 = a
        .system
        .lookup("/user/postman")
        .unwrap()
        .unwrap()
        .downcast::<Letter>()
        .unwrap();
    let (p2, p3) = (postman(&a, &b), postman(&a, &c));
    let route = vec![p2.clone(), p3.clone(), p2, p3, mailbox];
    // One at a time.
    for n in 1..=200 {
        p1.tell(Letter {
            n,
            route: route.clone(),
        });
        let got = next(&mut rx, "one at a time").await;
        assert_eq!((got.n, got.route.len()), (n, 0));
    }
    // All at once: every hop keeps its sender's order, so the whole route
    // does.
    for n in 201..=700 {
        p1.tell(Letter {
            n,
            route: route.clone(),
        });
    }
    for n in 201..=700 {
        assert_eq!(next(&mut rx, "all at once").await.n, n);
    }
    for n in [a, b, c] {
        assert_eq!(n.system.dead_letter_count(), 0);
        n.system.terminate().await;
    }
}

async fn until_answered(calc: &ActorRef<Calc>) {
    let start = Instant::now();
    while ask_sum(calc, Duration::from_millis(500)).await.is_err() {
        assert!(start.elapsed() < T, "no answer from {}", calc.path());
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_connections_reconnect_without_quarantine_and_keep_watches() {
    let quick = RemoteSettings {
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        ..RemoteSettings::default()
    };
    let b_port = free_port();
    let relay = Relay::start(b_port).await;
    let a = node("transport-fail-a", quick.clone()).await;
    let b = node(
        "transport-fail-b",
        RemoteSettings {
            port: b_port,
            canonical_port: Some(relay.port),
            ..quick
        },
    )
    .await;
    let a_events = record_events(&a);
    let b_events = record_events(&b);
    spawn_calculator(&b, "subject");
    let subject = remote_ref(&a, &b, "subject");
    until_answered(&subject).await;
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&subject);
    until_answered(&subject).await;

    // Every connection A made to B fails at once.
    relay.cut();
    spawn_calculator(&b, "subject2");
    let subject2 = remote_ref(&a, &b, "subject2");
    until_answered(&subject2).await;
    let probe2 = TestProbe::<u32>::new(&a.system);
    probe2.watch(&subject2);
    until_answered(&subject2).await;
    b.system
        .stop(&b.system.lookup("/user/subject2").unwrap().unwrap());
    probe2.expect_terminated_within(T, &subject2);
    // The watch from before the failure holds too, and ends once.
    b.system
        .stop(&b.system.lookup("/user/subject").unwrap().unwrap());
    probe.expect_terminated_within(T, &subject);
    probe.expect_no_msg(Duration::from_millis(300));

    let a_seen = events_so_far(&a_events);
    assert!(
        a_seen.iter().any(|e| matches!(
            e,
            RemotingEvent::Disassociated {
                reason: volley_remote::DisassociationReason::ConnectionLost(_),
                ..
            }
        )),
        "the cut was seen: {a_seen:?}"
    );
    for events in [a_seen, events_so_far(&b_events)] {
        assert!(
            !events.iter().any(|e| matches!(
                e,
                RemotingEvent::Quarantined { .. } | RemotingEvent::AddressTerminated { .. }
            )),
            "a connection failure is not a node failure: {events:?}"
        );
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_remotely_spawned_actor_died_with_its_node_terminates() {
    let a = node("deployer-a", common::quick_detector()).await;
    let c = node(
        "deployed-c",
        RemoteSettings {
            remote_spawn: true,
            ..common::quick_detector()
        },
    )
    .await;
    let hello: ActorRef<Calc> = a
        .remoting
        .spawn_remote(c.remoting.address(), "calculator", Some("hello"), &(), T)
        .await
        .unwrap();
    assert!(
        hello
            .path()
            .to_string()
            .starts_with(&c.remoting.address().to_string()),
        "{}",
        hello.path()
    );
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&hello);
    until_answered(&hello).await;
    // C crashes: no goodbye.
    c.remoting.shutdown();
    probe.expect_terminated_within(T, &hello);
    tokio::time::timeout(T, a.system.terminate())
        .await
        .expect("A terminates although its spawned actor's node crashed");
    c.system.terminate().await;
}
