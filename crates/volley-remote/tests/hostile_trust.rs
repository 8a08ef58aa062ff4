//! Hostile peers that try to redirect or impersonate (issue 13, items 2
//! and 4): raw sockets claim addresses, declare refs on third nodes,
//! forge replies and re-declare ids; untrusted mode refuses what it must.

mod common;
mod log_capture;
mod raw_peer;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use common::{node, remote_ref, spawn_calculator, Calc, Node, CALC_ID, SUM_ID, T};
use raw_peer::answer_handshake;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::transport::ConnectBack;
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Encoder, HandshakeRequest, Lane, MessageHeader, Pdu, Preamble,
    RefDeclaration, RefId, Reply, ReplyHandleDeclaration, SpawnRequest, PROTOCOL_VERSION,
};
use volley_remote::RemoteSettings;

/// `Calc::Add` as a raw peer writes it: refs are ids on the connection.
#[derive(Serialize, Deserialize)]
enum CalcOnWire {
    Add { a: i64, b: i64, reply_to: u32 },
}

/// A listener that counts the connections made to it.
struct Trap {
    address: Address,
    accepted: Arc<AtomicUsize>,
}

async fn trap(name: &str) -> Trap {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            held.push(s);
        }
    });
    Trap {
        address: format!("volley://{name}@127.0.0.1:{port}").parse().unwrap(),
        accepted,
    }
}

/// A connection to `to` on `lane` that handshook as `from`.
async fn handshake_as(to: &Address, lane: Lane, from: &Address) -> TcpStream {
    let mut s = TcpStream::connect((to.host(), to.port())).await.unwrap();
    let mut out = BytesMut::new();
    Preamble::new(lane).encode(&mut out);
    let request = HandshakeRequest {
        version: PROTOCOL_VERSION,
        from: from.clone(),
        uid: 11,
        to: to.clone(),
        auth: None,
    };
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeRequest(Box::new(request)), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
    let mut resp = [0u8; 512];
    assert!(s.read(&mut resp).await.unwrap() > 0, "no handshake answer");
    s
}

/// Declarations of `paths` as ids 1, 2, ... on the ordinary lane.
fn declarations(paths: &[&str]) -> BytesMut {
    let pdus: Vec<Pdu<'_>> = paths
        .iter()
        .zip(1..)
        .map(|(path, n)| {
            Pdu::RefDeclaration(RefDeclaration {
                id: id(n),
                uid: 0,
                path,
            })
        })
        .collect();
    frames(Lane::Ordinary, &pdus)
}

/// Encodes `pdus` as one lane's frames.
fn frames(lane: Lane, pdus: &[Pdu<'_>]) -> BytesMut {
    let mut out = BytesMut::new();
    for pdu in pdus {
        Encoder::for_lane(lane).encode(pdu, &mut out).unwrap();
    }
    out
}

fn id(n: u32) -> RefId {
    RefId::new(n).unwrap()
}

/// An `Add` from the raw peer to its declared id `to`, replying to `reply`.
fn add_frame(to: u32, reply: u32) -> BytesMut {
    let mut payload = BytesMut::new();
    BincodeSerializer
        .encode(
            &CalcOnWire::Add {
                a: 1,
                b: 2,
                reply_to: reply,
            },
            &mut payload,
        )
        .unwrap();
    frames(
        Lane::Ordinary,
        &[Pdu::UserMessage(volley_remote::wire::UserMessage {
            header: MessageHeader {
                recipient: id(to),
                sender: None,
                serializer: SerializerId::BINCODE,
                type_id: CALC_ID,
            },
            payload: &payload,
        })],
    )
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + T;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn verified_only() -> RemoteSettings {
    let mut settings = RemoteSettings::default();
    settings.trust.connect_back = ConnectBack::Verified;
    settings
}

/// Issue 13: a peer handshakes as `ghost@127.0.0.1:L`, then declares a
/// reply handle and asks through it, sends a spawn request and declares
/// its own path as a reply-to: with `connect_back = "verified"`, the
/// listener at L sees no connection.
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

/// Issue 13: a declaration naming a third node does not make the node
/// dial it (nor forward a message whose recipient lives there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declaration_cannot_make_the_node_dial_a_third_node() {
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let third = trap("third").await;
    let addr = b.remoting.address().clone();
    let me: Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
    let mut s = handshake_as(&addr, Lane::Ordinary, &me).await;
    let calc = format!("{addr}/user/calc");
    let elsewhere = format!("{}/user/victim", third.address);
    let mut out = declarations(&[&calc, &elsewhere]);
    // The calculator's answer to the third node, and a message for it.
    out.extend_from_slice(&add_frame(1, 2));
    out.extend_from_slice(&add_frame(2, 1));
    let before = b.system.dead_letter_count();
    s.write_all(&out).await.unwrap();
    wait_for("both dead-lettered", || {
        b.system.dead_letter_count() >= before + 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        third.accepted.load(Ordering::SeqCst),
        0,
        "the node dialed the third node"
    );
    b.system.terminate().await;
}

/// Issue 13: a re-declaration that names nothing here unbinds the id, so a
/// message meant for `/user/nobody` does not reach what the id named
/// before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_redeclaration_unbinds_the_id() {
    let b = node("beta", RemoteSettings::default()).await;
    let (probe, mut seen) = tokio::sync::mpsc::unbounded_channel::<i64>();
    b.system
        .spawn(
            "echo",
            volley::Props::new(move || common::Relay(probe.clone())),
        )
        .unwrap();
    let addr = b.remoting.address().clone();
    let me: Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
    let mut s = handshake_as(&addr, Lane::Ordinary, &me).await;
    let echo = format!("{addr}/user/echo");
    let nobody = format!("{addr}/user/nobody");
    let declare = |path| {
        frames(
            Lane::Ordinary,
            &[Pdu::RefDeclaration(RefDeclaration {
                id: id(5),
                uid: 0,
                path,
            })],
        )
    };
    let mut out = declare(&echo);
    out.extend_from_slice(&sum_frame(5, 1));
    out.extend_from_slice(&declare(&nobody));
    out.extend_from_slice(&sum_frame(5, 2));
    let before = b.system.dead_letter_count();
    s.write_all(&out).await.unwrap();
    assert_eq!(tokio::time::timeout(T, seen.recv()).await.unwrap(), Some(1));
    wait_for("the second dead-lettered", || {
        b.system.dead_letter_count() > before
    })
    .await;
    assert!(
        tokio::time::timeout(Duration::from_millis(300), seen.recv())
            .await
            .is_err(),
        "the message for /user/nobody reached /user/echo"
    );
    b.system.terminate().await;
}

/// An `i64` (the registered sum type) to the raw peer's declared id `to`.
fn sum_frame(to: u32, n: i64) -> BytesMut {
    let mut payload = BytesMut::new();
    BincodeSerializer.encode(&n, &mut payload).unwrap();
    frames(
        Lane::Ordinary,
        &[Pdu::UserMessage(volley_remote::wire::UserMessage {
            header: MessageHeader {
                recipient: id(to),
                sender: None,
                serializer: SerializerId::BINCODE,
                type_id: SUM_ID,
            },
            payload: &payload,
        })],
    )
}

/// A raw node that a real node asks: accepts the real node's ordinary
/// lane and returns the correlation ids of the reply handles declared on
/// it, in order, as they arrive.
async fn asked_raw_node(
    listener: TcpListener,
    me: Address,
) -> tokio::sync::mpsc::UnboundedReceiver<u64> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let me = me.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let (lane, mut buf) = answer_handshake(&mut s, &me).await;
                let decoder = Decoder::new(DecoderConfig::for_lane(lane));
                loop {
                    while let Ok(Some((pdu, used))) = decoder.decode_frame(&buf) {
                        if let Pdu::ReplyHandleDeclaration(d) = pdu {
                            let _ = tx.send(d.correlation);
                        }
                        let _ = buf.split_to(used);
                    }
                    if s.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
            });
        }
    });
    rx
}

/// Issue 13: correlation ids are unguessable, and a Reply forged by a
/// third peer that learnt one is not taken: the real ask times out on its
/// own instead of taking the forged value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_reply_from_a_third_peer_is_not_taken() {
    let a = node("alpha", RemoteSettings::default()).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let asked: Address = format!("volley://asked@127.0.0.1:{port}").parse().unwrap();
    let mut correlations = asked_raw_node(listener, asked.clone()).await;
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("{asked}/user/calc"))
        .unwrap();
    let ask = |calc: volley::ActorRef<Calc>| async move {
        calc.ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 2,
                reply_to,
            },
            Duration::from_secs(2),
        )
        .await
    };
    let first = tokio::spawn(ask(calc.clone()));
    let c1 = tokio::time::timeout(T, correlations.recv())
        .await
        .unwrap()
        .unwrap();
    let second = tokio::spawn(ask(calc.clone()));
    let c2 = tokio::time::timeout(T, correlations.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        c1.abs_diff(c2) > 1 << 32,
        "consecutive asks got nearby correlation ids {c1} and {c2}"
    );
    // A third peer that learnt the ids answers both with its own value.
    let forger: Address = "volley://forger@127.0.0.1:9".parse().unwrap();
    let mut s = handshake_as(a.remoting.address(), Lane::Ordinary, &forger).await;
    let mut payload = BytesMut::new();
    BincodeSerializer.encode(&666i64, &mut payload).unwrap();
    let reply = |correlation| {
        Pdu::Reply(Reply {
            correlation,
            serializer: SerializerId::BINCODE,
            type_id: SUM_ID,
            payload: &payload,
        })
    };
    let before = a.system.dead_letter_count();
    s.write_all(&frames(Lane::Ordinary, &[reply(c1), reply(c2)]))
        .await
        .unwrap();
    wait_for("forged replies refused", || {
        a.system.dead_letter_count() >= before + 2
    })
    .await;
    for ask in [first, second] {
        let outcome = ask.await.unwrap();
        assert!(
            matches!(outcome, Err(volley::AskError::Timeout { .. })),
            "the ask took a forged reply: {outcome:?}"
        );
    }
    a.system.terminate().await;
}

/// Issue 13: after 5,000 handshakes claiming spoofed addresses, a real
/// node's ask still succeeds, with default settings: a claimed address
/// that does not answer as the node that dialed costs no association.
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
    for _ in 0..10 {
        out.extend_from_slice(&add_frame(1, 2));
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

/// A system message of `kind` (docs/wire-protocol.md §5.13) to the raw
/// peer's declared id `to`, numbered `seq`.
fn system_frame(seq: u64, kind: u32, to: u32, payload: &[u8]) -> BytesMut {
    frames(
        Lane::Control,
        &[Pdu::SystemMessage(volley_remote::wire::SystemMessage {
            seq,
            ack: 0,
            header: MessageHeader {
                recipient: id(to),
                sender: None,
                serializer: SerializerId(1),
                type_id: kind,
            },
            payload,
        })],
    )
}

/// Issue 13 / Pekko's untrusted mode: a path not listed, a remote spawn
/// and a stop sent as a system message are each refused and counted; the
/// listed actor keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_mode_refuses_unlisted_paths_spawns_and_stops() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer: Address = format!("volley://peer@127.0.0.1:{port}").parse().unwrap();
    let _answers = asked_raw_node(listener, peer.clone()).await;
    let a = node("alpha", RemoteSettings::default()).await;
    let mut settings = RemoteSettings {
        remote_spawn: true,
        ..RemoteSettings::default()
    };
    settings.trust.untrusted_mode = true;
    settings.trust.trusted_paths = vec!["/user/allowed".into()];
    settings.trust.known_peers = vec![peer.to_string(), a.remoting.address().to_string()];
    log_capture::install();
    let b = node("beta", settings).await;
    spawn_calculator(&b, "allowed");
    spawn_calculator(&b, "other");
    let addr = b.remoting.address().clone();

    // A user message to an unlisted path.
    let mut ordinary = handshake_as(&addr, Lane::Ordinary, &peer).await;
    let other = format!("{addr}/user/other");
    let mut out = declarations(&[&other]);
    out.extend_from_slice(&sum_frame(1, 7));
    let before = b.system.dead_letter_count();
    ordinary.write_all(&out).await.unwrap();
    wait_for("unlisted path refused", || {
        b.system.dead_letter_count() >= before + 2
    })
    .await;

    // A stop and a spawn request as system messages.
    let mut control = handshake_as(&addr, Lane::Control, &peer).await;
    let allowed = format!("{addr}/user/allowed");
    let user = format!("{addr}/user");
    let mut out = frames(
        Lane::Control,
        &[
            Pdu::RefDeclaration(RefDeclaration {
                id: id(1),
                uid: 0,
                path: &allowed,
            }),
            Pdu::RefDeclaration(RefDeclaration {
                id: id(2),
                uid: 0,
                path: &user,
            }),
        ],
    );
    out.extend_from_slice(&system_frame(1, 3, 1, &[]));
    let spawn = frames(
        Lane::Control,
        &[Pdu::SpawnRequest(SpawnRequest {
            request_id: 5,
            serializer: SerializerId::BINCODE,
            kind: "calculator",
            name: "",
            props: &[],
        })],
    );
    out.extend_from_slice(&system_frame(2, 6, 2, &spawn));
    let before = b.system.dead_letter_count();
    control.write_all(&out).await.unwrap();
    wait_for("stop and spawn refused", || {
        b.system.dead_letter_count() >= before + 2
    })
    .await;

    // The listed actor was not stopped and still answers a real node.
    let allowed = remote_ref(&a, &b, "allowed");
    let sum = allowed
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 1,
                reply_to,
            },
            T,
        )
        .await
        .unwrap();
    assert_eq!(sum, 2);
    assert!(b.system.lookup("/user/other").unwrap().is_some());
    // Each refusal was logged, naming what was refused.
    for what in [
        "/user/other is not among trust.trusted_paths",
        "Terminate system message (untrusted mode)",
        "Spawn system message (untrusted mode)",
    ] {
        let logged = log_capture::events(|e| e.text.contains("refused") && e.text.contains(what));
        assert!(!logged.is_empty(), "no log line for {what}");
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A peer that claims a real node's address with another uid is not
/// dialed back, and does not make the node doubt the real one, even when
/// the real node has not talked to it yet (the two then check each other's
/// address): the real node's ask, right after, is answered.
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
