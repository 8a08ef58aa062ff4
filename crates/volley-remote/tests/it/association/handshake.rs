//! Apache Pekko's `artery.OutboundHandshakeSpec` (the dialing side of the
//! handshake, a stream stage there), carried over to volley's lanes with a
//! hand-driven acceptor (`raw_peer`) playing node B on the wire:
//!
//! - "timeout if handshake not completed", "retry HandshakeReq" and "not
//!   deliver messages from upstream until handshake completed": B takes
//!   A's connection and never answers the handshake; A writes nothing
//!   after its HandshakeRequest, gives the connection up after
//!   `handshake_timeout`, dials again, and once B answers, the message
//!   queued meanwhile arrives:
//!   `an_unanswered_handshake_times_out_and_is_retried_and_nothing_goes_before_it`.
//!
//! Skipped, with the reason: "send HandshakeReq when first pulled" / "also
//! when uniqueRemoteAddress future completed at startup" (every volley
//! connection starts with its handshake, checked by every raw-peer test),
//! "inject HandshakeReq" and "send HandshakeReq for liveness probing"
//! (Artery re-sends handshakes on an established stream; volley's
//! liveness is the heartbeat, `liveness/failure_detector.rs`).
//! `artery.InboundHandshakeSpec`: "send HandshakeRsp as reply" and
//! "complete remoteUniqueAddress" are what every raw-peer test relies on;
//! "drop message from unknown (receiving system restarted)": volley frames
//! name no destination incarnation, its connections do (a frame reaches
//! only the incarnation that answered its connection's handshake; refs
//! with an old uid are dropped there, `control/remote_watch.rs`).

use crate::common;
use crate::raw_peer;

use std::time::Duration;

use bytes::BytesMut;
use common::{node, Calc, CALC_ID, T};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Lane, Pdu, PduKind, Preamble, PREAMBLE_LEN,
};
use volley_remote::RemoteSettings;

/// A's next connection to `listener`, its preamble and HandshakeRequest
/// read and not answered; A must have written nothing after them.
async fn next_request(listener: &TcpListener) -> (TcpStream, Lane) {
    let (mut s, _) = tokio::time::timeout(T, listener.accept())
        .await
        .expect("A dials B")
        .unwrap();
    let (lane, rest) = read_request(&mut s).await;
    assert!(
        rest.is_empty(),
        "A wrote {} bytes after its request, unanswered",
        rest.len()
    );
    (s, lane)
}

/// Reads the preamble and the HandshakeRequest of a connection A made,
/// without answering; returns its lane and any bytes read past them.
async fn read_request(s: &mut TcpStream) -> (Lane, BytesMut) {
    let mut buf = BytesMut::with_capacity(4096);
    while buf.len() < PREAMBLE_LEN {
        let n = tokio::time::timeout(T, s.read_buf(&mut buf))
            .await
            .expect("a preamble")
            .unwrap();
        assert!(n > 0, "closed in the preamble");
    }
    let lane = Preamble::decode(&buf).unwrap().unwrap().lane;
    let _ = buf.split_to(PREAMBLE_LEN);
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    loop {
        if let Some((pdu, used)) = decoder.decode_frame(&buf).unwrap() {
            assert!(matches!(pdu, Pdu::HandshakeRequest(_)), "{pdu:?}");
            let _ = buf.split_to(used);
            return (lane, buf);
        }
        let n = tokio::time::timeout(T, s.read_buf(&mut buf))
            .await
            .expect("a handshake request")
            .unwrap();
        assert!(n > 0, "closed in the handshake");
    }
}

/// The kind of the first frame after the declarations on `s`, and its
/// `type_id` if it carries a message.
async fn first_message(s: &mut TcpStream) -> (PduKind, Option<u32>) {
    let mut buf = BytesMut::new();
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Ordinary));
    loop {
        while let Some((pdu, used)) = decoder.decode_frame(&buf).unwrap() {
            let found = match &pdu {
                Pdu::RefDeclaration(_) | Pdu::ReplyHandleDeclaration(_) => None,
                Pdu::UserMessage(m) => Some((pdu.kind(), Some(m.header.type_id))),
                Pdu::Request(r) => Some((pdu.kind(), Some(r.message.header.type_id))),
                other => Some((other.kind(), None)),
            };
            let _ = buf.split_to(used);
            if let Some(found) = found {
                return found;
            }
        }
        let n = tokio::time::timeout(T, s.read_buf(&mut buf))
            .await
            .expect("a message from A")
            .unwrap();
        assert!(n > 0, "closed before a message");
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_handshake_times_out_and_is_retried_and_nothing_goes_before_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let b: Address = format!("volley://silent-b@127.0.0.1:{port}")
        .parse()
        .unwrap();
    let a = node(
        "dialer-a",
        RemoteSettings {
            handshake_timeout: Duration::from_millis(500),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_millis(200),
            ..RemoteSettings::default()
        },
    )
    .await;
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("{b}/user/calc"))
        .unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let reply_to = a
        .system
        .spawn(
            "answers",
            volley::Props::new(move || common::Relay(tx.clone())),
        )
        .unwrap();
    calc.tell(Calc::Add {
        a: 1,
        b: 2,
        reply_to,
    });

    // The control lane is answered; the ordinary lane's first connection
    // is not.
    let mut answered = Vec::new();
    let mut unanswered = loop {
        let (mut s, lane) = next_request(&listener).await;
        if lane == Lane::Ordinary {
            break s;
        }
        raw_peer::respond_accepted(&mut s, &b, 11).await;
        answered.push(s);
    };
    // Nothing but the request ever comes on it; A gives it up.
    let mut after = [0u8; 256];
    let read = tokio::time::timeout(T, unanswered.read(&mut after))
        .await
        .expect("A closes an unanswered connection after its handshake timeout");
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "A wrote before the handshake was answered: {read:?}"
    );

    // A dials again; this time B answers, and the queued message comes.
    let mut retried = loop {
        let (mut s, lane) = next_request(&listener).await;
        raw_peer::respond_accepted(&mut s, &b, 11).await;
        if lane == Lane::Ordinary {
            break s;
        }
        answered.push(s);
    };
    assert_eq!(
        first_message(&mut retried).await,
        (PduKind::UserMessage, Some(CALC_ID)),
        "the message queued while the handshake was retried"
    );
    a.system.terminate().await;
    drop(answered);
}
