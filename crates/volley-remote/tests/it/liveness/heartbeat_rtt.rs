//! Heartbeat round trips: a node answers a peer's heartbeats with
//! HeartbeatAck on its own connection to that peer, and only then; an ack
//! never makes a node dial, and an unsolicited ack is harmless.

use crate::common;
use crate::raw_peer;

use std::time::{Duration, Instant};

use common::{eventually, node_settings, node_with, quick_heartbeats, spawn_calculator, Calc, T};
use tokio::io::AsyncWriteExt;
use volley_remote::transport::ConnectBack;
use volley_remote::wire::{Lane, HEARTBEAT_ACK_FRAME};

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_come_only_once_the_peer_has_its_own_connection_back() {
    let a = node_with("rtt-a", node_settings(), quick_heartbeats()).await;
    // B dials back only verified peers, and A is not one: B answers A's
    // heartbeats only once it has a connection of its own to A.
    let mut verified_only = quick_heartbeats();
    verified_only.trust.connect_back = ConnectBack::Verified;
    let b = node_with("rtt-b", node_settings(), verified_only).await;
    let (a_addr, b_addr) = (a.remoting.address().clone(), b.remoting.address().clone());
    let calc_b = spawn_calculator(&b, "calc");
    spawn_calculator(&a, "calc");

    // A tells B: B has no association with A, so it answers none of A's
    // heartbeats and dials nothing to do so.
    let to_b = a
        .remoting
        .resolve::<Calc>(&format!("{b_addr}/user/calc"))
        .unwrap();
    for n in 0..5 {
        to_b.tell(Calc::Seq { from: 0, n });
    }
    let start = Instant::now();
    while calc_b.ask(Calc::Report, T).await.unwrap()[0] < 5 {
        assert!(start.elapsed() < T, "A's tells never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Ten heartbeat intervals: a dial-back would have happened by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        b.remoting.association_state(&a_addr),
        None,
        "B never dialed A"
    );
    assert_eq!(
        a.remoting.heartbeat_rtt(&b_addr),
        None,
        "no acks, no round trip"
    );

    // Once B has its own connection to A (it sends A something), it
    // answers A's heartbeats: the round trip appears.
    let to_a = b
        .remoting
        .resolve::<Calc>(&format!("{a_addr}/user/calc"))
        .unwrap();
    to_a.tell(Calc::Seq { from: 1, n: 0 });
    eventually("A's heartbeats timed", || {
        a.remoting.heartbeat_rtt(&b_addr).is_some()
    })
    .await;
    let rtt = a.remoting.heartbeat_rtt(&b_addr).unwrap();
    assert!(
        rtt > Duration::ZERO && rtt < Duration::from_secs(5),
        "{rtt:?}"
    );
    // And B's own heartbeats to A are answered as well: A has had a
    // connection to B all along.
    eventually("B's heartbeats timed", || {
        b.remoting.heartbeat_rtt(&a_addr).is_some()
    })
    .await;
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsolicited_ack_is_ignored_and_the_connection_stays() {
    let b = node_with("rtt-c", node_settings(), quick_heartbeats()).await;
    let b_addr = b.remoting.address().clone();
    let me: volley_remote::wire::Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
    let mut s = raw_peer::handshaken_as(&b_addr, &me, 7, Lane::Control).await;
    for _ in 0..3 {
        s.write_all(&HEARTBEAT_ACK_FRAME).await.unwrap();
    }
    s.flush().await.unwrap();
    assert!(
        !raw_peer::closed_within(&mut s, Duration::from_millis(300)).await,
        "an ack nobody asked for is not a protocol error"
    );
    assert_eq!(b.remoting.association_state(&me), None);
    assert_eq!(b.remoting.heartbeat_rtt(&me), None);
    b.system.terminate().await;
}
