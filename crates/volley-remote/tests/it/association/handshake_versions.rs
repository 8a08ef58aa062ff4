//! Handshake versions (docs/wire-protocol.md §5.1a): a node tells its
//! stamp in a handshake of version 2, and still talks to a node of
//! version 1, which tells none, in both directions.

use crate::common;
use crate::raw_peer;

use bytes::BytesMut;
use common::{node, spawn_calculator, T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Encoder, HandshakeResponse, HandshakeStatus, Lane, Pdu,
    HANDSHAKE_VERSION_STAMPED, PREAMBLE_LEN, PROTOCOL_VERSION,
};
use volley_remote::RemoteSettings;

/// Reads a connection's preamble and handshake request; returns the
/// request's version and what followed it.
async fn request_version(s: &mut TcpStream) -> (u8, BytesMut) {
    let mut buf = BytesMut::new();
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    loop {
        if buf.len() >= PREAMBLE_LEN {
            if let Some((Pdu::HandshakeRequest(r), used)) =
                decoder.decode_frame(&buf[PREAMBLE_LEN..]).unwrap()
            {
                let version = r.version;
                let _ = buf.split_to(PREAMBLE_LEN + used);
                return (version, buf);
            }
        }
        let n = tokio::time::timeout(T, s.read_buf(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed before its request");
    }
}

/// Answers as a node of version 1 answers a request of another version.
async fn refuse_version(s: &mut TcpStream, me: &Address) {
    let response = HandshakeResponse {
        version: PROTOCOL_VERSION,
        status: HandshakeStatus::IncompatibleVersion,
        from: me.clone(),
        uid: 11,
        auth: None,
        reason: "protocol version 2 is not 1",
    };
    let mut out = BytesMut::new();
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeResponse(Box::new(response)), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_of_version_1_is_dialed_again_at_once_without_a_stamp() {
    let a = node("alpha", RemoteSettings::default()).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let old: Address = format!("volley://old@127.0.0.1:{port}").parse().unwrap();
    let to_old = a
        .remoting
        .resolve::<i64>(&format!("{old}/user/anything"))
        .unwrap();
    to_old.tell(7);
    // Every lane's first dial is stamped and refused; its next one, at
    // once (no back-off: the test's limit is far below none), is not.
    let mut accepted = 0;
    let mut refused = 0;
    while accepted < 3 {
        let (mut s, _) = tokio::time::timeout(T, listener.accept())
            .await
            .unwrap()
            .unwrap();
        let (version, rest) = request_version(&mut s).await;
        if version == HANDSHAKE_VERSION_STAMPED {
            assert!(rest.is_empty(), "nothing but the request before the answer");
            refuse_version(&mut s, &old).await;
            refused += 1;
        } else {
            assert_eq!(version, PROTOCOL_VERSION);
            raw_peer::respond_accepted(&mut s, &old, 11).await;
            accepted += 1;
            // A version-1 answer gets no stamp back: the next frame, if
            // any, is the lane's own.
            tokio::spawn(async move {
                let mut sink = [0u8; 1024];
                while s.read(&mut sink).await.is_ok_and(|n| n > 0) {}
            });
        }
    }
    assert_eq!(refused, 3, "one stamped dial per lane");
    let association = a.remoting.association_state(&old);
    assert_eq!(association, Some(volley_remote::AssociationState::Active));
    a.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_of_version_1_gets_an_answer_of_version_1_and_no_stamp() {
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let me: Address = "volley://old@127.0.0.1:9".parse().unwrap();
    let mut s = raw_peer::connect(b.remoting.address()).await;
    s.write_all(&raw_peer::handshake_bytes(
        b.remoting.address(),
        &me,
        5,
        Lane::Ordinary,
    ))
    .await
    .unwrap();
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let mut buf = BytesMut::new();
    let used = loop {
        if let Some((pdu, used)) = decoder.decode_frame(&buf).unwrap() {
            let Pdu::HandshakeResponse(r) = pdu else {
                panic!("{pdu:?}")
            };
            assert_eq!(
                (r.status, r.version),
                (HandshakeStatus::Accepted, PROTOCOL_VERSION)
            );
            break used;
        }
        let n = tokio::time::timeout(T, s.read_buf(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed in the answer");
    };
    // Nothing follows the answer (no stamp, no request for one): B waits
    // for this peer's frames.
    let _ = buf.split_to(used);
    let more =
        tokio::time::timeout(std::time::Duration::from_millis(100), s.read_buf(&mut buf)).await;
    assert!(
        more.is_err() && buf.is_empty(),
        "B sent more than its answer: {buf:?}"
    );
    b.system.terminate().await;
}
