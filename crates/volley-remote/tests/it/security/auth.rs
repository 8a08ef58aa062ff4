//! The shared secret (issue 13, item 3): both sides of every connection
//! prove it with a challenge and response, it never crosses the wire, and
//! a side that cannot prove it gets no message.

use crate::common;
use crate::raw_peer;

use std::time::Duration;

use bytes::BytesMut;
use common::{node, remote_ref, spawn_calculator, Node, SUM_ID, T};
use raw_peer::connect;
use ring::hmac;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley::Props;
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::{
    Address, AuthProof, Decoder, DecoderConfig, Encoder, HandshakeRequest, HandshakeResponse,
    HandshakeStatus, Lane, MessageHeader, Pdu, Preamble, RefDeclaration, RefId, UserMessage,
    PREAMBLE_LEN, PROTOCOL_VERSION,
};
use volley_remote::RemoteSettings;

const SECRET: &str = "correct horse battery staple";

fn with_secret(secret: Option<&str>) -> RemoteSettings {
    RemoteSettings {
        secret: secret.map(str::to_string),
        ..RemoteSettings::default()
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_with_the_same_secret_talk_both_ways() {
    let a = node("alpha", with_secret(Some(SECRET))).await;
    let b = node("beta", with_secret(Some(SECRET))).await;
    spawn_calculator(&a, "calc");
    spawn_calculator(&b, "calc");
    assert_eq!(
        common::ask_sum(&remote_ref(&a, &b, "calc"), T)
            .await
            .unwrap(),
        42
    );
    assert_eq!(
        common::ask_sum(&remote_ref(&b, &a, "calc"), T)
            .await
            .unwrap(),
        42
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A wrong secret, or a secret on one side only: nothing gets through.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_secret_gets_nothing_through() {
    let b = node("beta", with_secret(Some(SECRET))).await;
    spawn_calculator(&b, "calc");
    for settings in [with_secret(Some("another secret")), with_secret(None)] {
        let a = node("alpha", settings).await;
        let calc = remote_ref(&a, &b, "calc");
        let answer = common::ask_sum(&calc, Duration::from_millis(800)).await;
        assert!(
            matches!(answer, Err(volley::AskError::Timeout { .. })),
            "{answer:?}"
        );
        a.system.terminate().await;
    }
    // The other way round: a node without a secret refuses one that has.
    let open = node("gamma", with_secret(None)).await;
    spawn_calculator(&open, "calc");
    let a = node("alpha", with_secret(Some(SECRET))).await;
    let answer = common::ask_sum(&remote_ref(&a, &open, "calc"), Duration::from_millis(800)).await;
    assert!(
        matches!(answer, Err(volley::AskError::Timeout { .. })),
        "{answer:?}"
    );
    for n in [a, b, open] {
        n.system.terminate().await;
    }
}

/// What a raw acceptor received on one connection, until the dialer
/// stopped sending or 1 s passed.
async fn received(s: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(1), s.read(&mut chunk)).await {
        if n == 0 {
            break;
        }
        all.extend_from_slice(&chunk[..n]);
    }
    all
}

/// Answers a handshake request (already in `got`) as `me`, accepting,
/// with `auth`; returns everything the dialer sent.
async fn answer_as_impostor(s: &mut TcpStream, me: &Address, auth: Option<&[u8]>) -> Vec<u8> {
    // The preamble, then the request, whole. (Anything the dialer sent
    // after it, before the answer, is read with the rest below.)
    let mut got = BytesMut::new();
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    while got.len() < PREAMBLE_LEN
        || decoder
            .decode_frame(&got[PREAMBLE_LEN..])
            .unwrap()
            .is_none()
    {
        assert!(
            s.read_buf(&mut got).await.unwrap() > 0,
            "closed before its handshake request"
        );
    }
    let response = HandshakeResponse {
        version: PROTOCOL_VERSION,
        status: HandshakeStatus::Accepted,
        from: me.clone(),
        uid: 5,
        auth,
        reason: "",
    };
    let mut out = BytesMut::new();
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeResponse(Box::new(response)), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
    let mut all = got.to_vec();
    all.extend(received(s).await);
    all
}

/// Issue 13: an impostor acceptor (a listener a node dials because a ref
/// points at it) learns nothing about the secret and gets no message,
/// whether it answers with no proof, a made-up one, or one replayed from
/// a real node.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impostor_acceptor_learns_nothing_and_gets_no_message() {
    let a = node("alpha", with_secret(Some(SECRET))).await;
    let b = node("beta", with_secret(Some(SECRET))).await;
    // A real acceptor's answer to a raw request, to replay.
    let replayed = real_acceptor_auth(&b).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let impostor: Address = format!("volley://beta@127.0.0.1:{port}").parse().unwrap();
    let victim = a
        .remoting
        .resolve::<i64>(&format!("{impostor}/user/anything"))
        .unwrap();
    let made_up = [0x5a; 64];
    for auth in [None, Some(&made_up[..]), Some(&replayed[..])] {
        for n in 0..5 {
            victim.tell(n);
        }
        let (mut s, _) = tokio::time::timeout(T, listener.accept())
            .await
            .unwrap()
            .unwrap();
        let got = answer_as_impostor(&mut s, &impostor, auth).await;
        assert!(
            !got.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "the secret crossed the wire"
        );
        // Preamble and request only: no proof, no declaration, no message.
        let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
        let mut rest = &got[PREAMBLE_LEN..];
        let mut kinds = Vec::new();
        while let Ok(Some((pdu, used))) = decoder.decode_frame(rest) {
            kinds.push(pdu.kind());
            rest = &rest[used..];
        }
        assert_eq!(
            kinds,
            vec![volley_remote::wire::PduKind::HandshakeRequest],
            "with auth {auth:?} the impostor got more than the request"
        );
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

/// The auth field of `b`'s answer to a raw handshake request.
async fn real_acceptor_auth(b: &Node) -> Vec<u8> {
    let me: Address = "volley://alpha@127.0.0.1:9".parse().unwrap();
    let mut s = connect(b.remoting.address()).await;
    s.write_all(&request_bytes(b.remoting.address(), &me, &[7; 32]))
        .await
        .unwrap();
    let (auth, _) = read_response(&mut s).await;
    auth
}

fn request_bytes(to: &Address, me: &Address, challenge: &[u8; 32]) -> BytesMut {
    let mut out = BytesMut::new();
    Preamble::new(Lane::Ordinary).encode(&mut out);
    let request = HandshakeRequest {
        version: PROTOCOL_VERSION,
        from: me.clone(),
        uid: 77,
        to: to.clone(),
        auth: Some(challenge),
    };
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeRequest(Box::new(request)), &mut out)
        .unwrap();
    out
}

/// The response's auth field and uid.
async fn read_response(s: &mut TcpStream) -> (Vec<u8>, u64) {
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let mut buf = BytesMut::new();
    loop {
        if let Some((Pdu::HandshakeResponse(r), _)) = decoder.decode_frame(&buf).unwrap() {
            assert_eq!(r.status, HandshakeStatus::Accepted, "{}", r.reason);
            return (r.auth.unwrap().to_vec(), r.uid);
        }
        assert!(s.read_buf(&mut buf).await.unwrap() > 0, "closed");
    }
}

/// The initiator's proof, computed here from the specification
/// (docs/wire-protocol.md §6.1), independently of the crate's code.
fn initiator_proof(
    me: &Address,
    to: &Address,
    mine: &[u8; 32],
    auth: &[u8],
    their_uid: u64,
) -> [u8; 32] {
    let mut signed = b"volley handshake v1: initiator".to_vec();
    signed.extend_from_slice(mine);
    signed.extend_from_slice(&auth[..32]);
    for a in [me, to] {
        let text = a.to_string();
        signed.extend_from_slice(&(text.len() as u16).to_le_bytes());
        signed.extend_from_slice(text.as_bytes());
    }
    signed.extend_from_slice(&77u64.to_le_bytes());
    signed.extend_from_slice(&their_uid.to_le_bytes());
    signed.push(Lane::Ordinary as u8);
    let key = hmac::Key::new(hmac::HMAC_SHA256, SECRET.as_bytes());
    hmac::sign(&key, &signed).as_ref().try_into().unwrap()
}

/// A declaration of `/user/sink` as id 1 and an `i64` to it.
fn message_to_sink(to: &Address, n: i64) -> BytesMut {
    let sink = format!("{to}/user/sink");
    let enc = Encoder::for_lane(Lane::Ordinary);
    let mut out = BytesMut::new();
    enc.encode(
        &Pdu::RefDeclaration(RefDeclaration {
            id: RefId::new(1).unwrap(),
            uid: 0,
            path: &sink,
        }),
        &mut out,
    )
    .unwrap();
    let mut payload = BytesMut::new();
    BincodeSerializer.encode(&n, &mut payload).unwrap();
    enc.encode(
        &Pdu::UserMessage(UserMessage {
            header: MessageHeader {
                recipient: RefId::new(1).unwrap(),
                sender: None,
                serializer: SerializerId::BINCODE,
                type_id: SUM_ID,
            },
            payload: &payload,
        }),
        &mut out,
    )
    .unwrap();
    out
}

fn proof_frame(mac: [u8; 32]) -> BytesMut {
    let mut out = BytesMut::new();
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::AuthProof(AuthProof { mac }), &mut out)
        .unwrap();
    out
}

/// Issue 13: a proof is good for its own connection only (a replay on a
/// new one, with new challenges, is refused), and a message sent before
/// the proof is refused with its connection.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_do_not_replay_and_nothing_passes_before_one() {
    let b = node("beta", with_secret(Some(SECRET))).await;
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<i64>();
    b.system
        .spawn("sink", Props::new(move || common::Relay(tx.clone())))
        .unwrap();
    let to = b.remoting.address().clone();
    let me: Address = "volley://alpha@127.0.0.1:9".parse().unwrap();
    let challenge = [9u8; 32];

    // A proper exchange, computed here: the message arrives.
    let mut s = connect(&to).await;
    s.write_all(&request_bytes(&to, &me, &challenge))
        .await
        .unwrap();
    let (auth, uid) = read_response(&mut s).await;
    let proof = initiator_proof(&me, &to, &challenge, &auth, uid);
    let mut out = proof_frame(proof);
    out.extend_from_slice(&message_to_sink(&to, 1));
    s.write_all(&out).await.unwrap();
    assert_eq!(tokio::time::timeout(T, seen.recv()).await.unwrap(), Some(1));

    // The same request and the same proof on a new connection.
    let mut s2 = connect(&to).await;
    s2.write_all(&request_bytes(&to, &me, &challenge))
        .await
        .unwrap();
    let (auth2, _) = read_response(&mut s2).await;
    assert_ne!(auth2[..32], auth[..32], "the acceptor's challenge is fresh");
    let mut out = proof_frame(proof);
    out.extend_from_slice(&message_to_sink(&to, 2));
    let _ = s2.write_all(&out).await;
    assert!(
        raw_peer::closed_within(&mut s2, T).await,
        "a replayed proof was accepted"
    );

    // A message instead of the proof.
    let mut s3 = connect(&to).await;
    s3.write_all(&request_bytes(&to, &me, &challenge))
        .await
        .unwrap();
    let _ = read_response(&mut s3).await;
    let _ = s3.write_all(&message_to_sink(&to, 3)).await;
    assert!(
        raw_peer::closed_within(&mut s3, T).await,
        "a message before the proof"
    );

    assert!(
        tokio::time::timeout(Duration::from_millis(500), seen.recv())
            .await
            .is_err(),
        "an unauthenticated message was delivered"
    );
    b.system.terminate().await;
}
