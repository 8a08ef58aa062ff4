//! Dialing back a node that dials in (issue 13, item 2): a peer's claimed
//! address is checked before this node connects to it (`admission/probe.rs`), or not
//! dialed at all (`trust.connect_back = "verified"`), so made-up addresses
//! neither redirect the node nor fill its association table.

use crate::common;
use crate::raw_peer;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{node, remote_ref, spawn_calculator, Calc, Node, T};
use raw_peer::hostile::*;
use tokio::io::AsyncWriteExt;
use volley_remote::serialization::SerializerId;
use volley_remote::transport::ConnectBack;
use volley_remote::wire::{
    Address, Lane, Pdu, RefDeclaration, ReplyHandleDeclaration, SpawnRequest,
};
use volley_remote::RemoteSettings;

fn verified_only() -> RemoteSettings {
    let mut settings = RemoteSettings::default();
    settings.trust.connect_back = ConnectBack::Verified;
    settings
}

/// Issue 13: a peer handshakes as `ghost@127.0.0.1:L`, then declares a
/// reply handle and asks through it, sends a spawn request and declares
/// its own path as a reply-to: with `connect_back = "verified"`, the
/// listener at L sees no connection.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ghost_cannot_make_the_node_dial_the_address_it_claims() {
    let mut settings = verified_only();
    settings.remote_spawn = true;
    let b = node("beta", settings).await;
    spawn_calculator(&b, "calc");
    let ghost = trap("ghost").await;
    let addr = b.remoting.address().clone();
    let mut s = handshake_as(&addr, Lane::Ordinary, &ghost.address).await;
    let calc = format!("{addr}/user/calc");
    let own = format!("{}/user/me", ghost.address);
    let mut out = frames(
        Lane::Ordinary,
        &[
            Pdu::RefDeclaration(RefDeclaration {
                id: id(1),
                uid: 0,
                path: &calc,
            }),
            Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration {
                id: id(2),
                correlation: 99,
            }),
            Pdu::RefDeclaration(RefDeclaration {
                id: id(3),
                uid: 0,
                path: &own,
            }),
            Pdu::SpawnRequest(SpawnRequest {
                request_id: 5,
                serializer: SerializerId::BINCODE,
                kind: "calculator",
                name: "",
                props: &[],
            }),
        ],
    );
    out.extend_from_slice(&add_frame(1, 2));
    out.extend_from_slice(&add_frame(1, 3));
    let before = b.system.dead_letter_count();
    s.write_all(&out).await.unwrap();
    // Both answers and the spawn request are refused, counted.
    wait_for("refusals counted", || {
        b.system.dead_letter_count() >= before + 3
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        ghost.accepted.load(Ordering::SeqCst),
        0,
        "the node dialed the ghost"
    );
    b.system.terminate().await;
}

/// Issue 13: after 5,000 handshakes claiming spoofed addresses, a real
/// node's ask still succeeds, with default settings: a claimed address
/// that does not answer as the node that dialed costs no association.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoofed_addresses_do_not_lock_a_real_node_out() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b: Node = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let addr = b.remoting.address().clone();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for i in 0..5_000u32 {
        let spoofed: Address = format!("volley://spoof{i}@127.0.0.1:{closed}")
            .parse()
            .unwrap();
        drop(handshake_as(&addr, Lane::Control, &spoofed).await);
    }
    let calc = remote_ref(&a, &b, "calc");
    let sum = calc
        .ask(
            |reply_to| Calc::Add {
                a: 20,
                b: 22,
                reply_to,
            },
            T,
        )
        .await
        .unwrap();
    assert_eq!(sum, 42);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Issue 13, with default settings: a ghost whose claimed address is a
/// listener that never answers gets one check of that address (not three
/// lanes redialing it for ever), and its asks' answers are dead letters.
// One dispatcher kind: what this checks is the transport's timing (its
// connection attempts and timers), which no actor's scheduling touches,
// and it waits seconds of real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_ghost_costs_one_connection_attempt_at_most() {
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let ghost = trap("ghost").await;
    let addr = b.remoting.address().clone();
    let mut s = handshake_as(&addr, Lane::Ordinary, &ghost.address).await;
    let calc = format!("{addr}/user/calc");
    let mut out = declarations(&[&calc]);
    out.extend_from_slice(&frames(
        Lane::Ordinary,
        &[Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration {
            id: id(2),
            correlation: 99,
        })],
    ));
    for _ in 0..5 {
        out.extend_from_slice(&add_frame(1, 2));
    }
    // Its requests that carry their reply handles inline likewise.
    for correlation in 100..105 {
        out.extend_from_slice(&add_request(1, correlation));
    }
    let before = b.system.dead_letter_count();
    s.write_all(&out).await.unwrap();
    wait_for("answers dead-lettered", || {
        b.system.dead_letter_count() >= before + 10
    })
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let dialed = ghost.accepted.load(Ordering::SeqCst);
    assert!(
        dialed <= 1,
        "the node dialed the ghost's address {dialed} times"
    );
    b.system.terminate().await;
}

/// A peer that claims a real node's address with another uid is not
/// dialed back, and does not make the node doubt the real one, even when
/// the real node has not talked to it yet (the two then check each other's
/// address): the real node's ask, right after, is answered.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoof_of_a_real_node_does_not_shut_the_real_one_out() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let spoof = handshake_as(b.remoting.address(), Lane::Control, a.remoting.address()).await;
    let sum = common::ask_sum(&remote_ref(&a, &b, "calc"), T)
        .await
        .unwrap();
    assert_eq!(sum, 42);
    drop(spoof);
    a.system.terminate().await;
    b.system.terminate().await;
}
