//! Bad bytes on the socket: the offending connection (or just the message)
//! is refused with a specific, logged error; undecodable messages become
//! counted dead letters; the node keeps serving its other connections.

use crate::common;
use crate::raw_peer;

use std::time::Duration;

use bytes::BytesMut;
use common::{node, remote_ref, spawn_calculator, Calc, CALC_ID, T};
use raw_peer::{connect, handshaken};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use volley_remote::serialization::SerializerId;
use volley_remote::wire::{
    Address, Encoder, HandshakeRequest, Lane, MessageHeader, Pdu, Preamble, RefDeclaration, RefId,
    PROTOCOL_VERSION,
};
use volley_remote::RemoteSettings;

/// Reads until the peer closes; true if it did within 5 s.
async fn closed_by_peer(s: &mut TcpStream) -> bool {
    raw_peer::closed_within(s, Duration::from_secs(5)).await
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_connections_are_closed_and_the_node_keeps_serving() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let addr = b.remoting.address().clone();
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("{addr}/user/calc"))
        .unwrap();
    let works = || async {
        calc.ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 2,
                reply_to,
            },
            T,
        )
        .await
        .unwrap()
    };
    assert_eq!(works().await, 3);

    // Garbage instead of a preamble.
    let mut s = connect(&addr).await;
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert!(closed_by_peer(&mut s).await, "garbage accepted");

    // Right length, wrong magic.
    let mut s = connect(&addr).await;
    s.write_all(b"VLLZ\x01\x01").await.unwrap();
    assert!(closed_by_peer(&mut s).await, "wrong magic accepted");

    // A frame longer than the lane's maximum, announced after the handshake.
    let mut s = handshaken(&addr).await;
    s.write_all(&(64 * 1024 * 1024u32).to_le_bytes())
        .await
        .unwrap();
    assert!(closed_by_peer(&mut s).await, "oversized frame accepted");

    // A truncated frame, then the connection goes away.
    let mut s = handshaken(&addr).await;
    s.write_all(&[100, 0, 0, 0, 3, 1, 2]).await.unwrap();
    drop(s);

    assert_eq!(works().await, 3, "the node stopped serving");

    // Undecodable messages on an otherwise fine connection: unknown type id,
    // and a payload that does not deserialize. Each is one dead letter.
    let mut s = handshaken(&addr).await;
    let enc = Encoder::for_lane(Lane::Ordinary);
    let mut out = BytesMut::new();
    let path = format!("{addr}/user/calc");
    let id = RefId::new(1).unwrap();
    enc.encode(
        &Pdu::RefDeclaration(RefDeclaration {
            id,
            uid: 0,
            path: &path,
        }),
        &mut out,
    )
    .unwrap();
    let header = |type_id| MessageHeader {
        recipient: id,
        sender: None,
        serializer: SerializerId::BINCODE,
        type_id,
    };
    enc.user_message_with(&mut out, &header(9999), |b| {
        b.extend_from_slice(&[1, 2, 3]);
        Ok(())
    })
    .unwrap();
    enc.user_message_with(&mut out, &header(CALC_ID), |b| {
        b.extend_from_slice(&[0xff; 3]);
        Ok(())
    })
    .unwrap();
    let before = b.system.dead_letter_count();
    s.write_all(&out).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while b.system.dead_letter_count() < before + 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "undecodable messages not dead-lettered"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(works().await, 3);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshakes_to_the_wrong_address_or_without_the_token_are_refused() {
    let b = node(
        "beta",
        RemoteSettings {
            secret: Some("s3cret".into()),
            ..RemoteSettings::default()
        },
    )
    .await;
    let a = node("alpha", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    // A has no token: its messages never get through.
    let calc = remote_ref(&a, &b, "calc");
    let err = calc
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 2,
                reply_to,
            },
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, volley::AskError::Timeout { .. }), "{err}");
    // A handshake naming another node is refused.
    let mut wrong = b.remoting.address().to_string();
    wrong = wrong.replace("beta@", "gamma@");
    let wrong: Address = wrong.parse().unwrap();
    let mut s = connect(b.remoting.address()).await;
    let mut out = BytesMut::new();
    Preamble::new(Lane::Ordinary).encode(&mut out);
    Encoder::for_lane(Lane::Control)
        .encode(
            &Pdu::HandshakeRequest(Box::new(HandshakeRequest {
                version: PROTOCOL_VERSION,
                from: "volley://m@127.0.0.1:9".parse().unwrap(),
                uid: 1,
                to: wrong,
                auth: Some(b"s3cret"),
            })),
            &mut out,
        )
        .unwrap();
    s.write_all(&out).await.unwrap();
    assert!(closed_by_peer(&mut s).await);
    a.system.terminate().await;
    b.system.terminate().await;
}
