//! Hostile peers that try to impersonate or forward (issue 13, items 2
//! and 4): third-node declarations, forged replies, re-declarations, and
//! untrusted mode. Dialing back a node that dials in: hostile_dial_back.rs.

use crate::common;
use crate::log_capture;
use crate::raw_peer;

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BytesMut;
use common::{node, remote_ref, spawn_calculator, Calc, SUM_ID, T};
use raw_peer::answer_handshake;
use raw_peer::hostile::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Lane, MessageHeader, Pdu, RefDeclaration, Reply, SpawnRequest,
};
use volley_remote::RemoteSettings;

/// Issue 13: a declaration naming a third node does not make the node
/// dial it (nor forward a message whose recipient lives there).
#[volley_testkit::each_dispatcher]
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
    // A window for a wrong dial to show (what is checked).
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
#[volley_testkit::each_dispatcher]
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

/// A raw node that a real node asks: accepts the real node's ordinary
/// lane and returns the correlation ids of the reply handles its requests
/// carry (or that are declared on it), in order, as they arrive.
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
                        match pdu {
                            // An ask's request carries its handle inline.
                            Pdu::Request(r) => {
                                let _ = tx.send(r.correlation);
                            }
                            Pdu::ReplyHandleDeclaration(d) => {
                                let _ = tx.send(d.correlation);
                            }
                            _ => {}
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
#[volley_testkit::each_dispatcher]
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
#[volley_testkit::each_dispatcher]
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
