//! A hand-driven peer: raw TCP connections that speak the wire protocol
//! byte by byte, for tests that need frames no well-behaved node sends.
#![allow(dead_code)]

pub mod hostile;
pub mod refs;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Encoder, Features, HandshakeRequest, HandshakeResponse,
    HandshakeStatus, Lane, Pdu, Preamble, HANDSHAKE_VERSION_STAMPED, PREAMBLE_LEN,
    PROTOCOL_VERSION,
};

pub async fn connect(to: &Address) -> TcpStream {
    TcpStream::connect((to.host(), to.port())).await.unwrap()
}

/// An ordinary-lane connection that completed a valid handshake as node
/// "mallory".
pub async fn handshaken(to: &Address) -> TcpStream {
    let me: Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
    handshaken_as(to, &me, 7, Lane::Ordinary).await
}

/// A connection on `lane` that completed a valid handshake as incarnation
/// `uid` of node `me`.
pub async fn handshaken_as(to: &Address, me: &Address, uid: u64, lane: Lane) -> TcpStream {
    let mut s = connect(to).await;
    s.write_all(&handshake_bytes(to, me, uid, lane))
        .await
        .unwrap();
    let mut resp = [0u8; 512];
    let n = s.read(&mut resp).await.unwrap();
    assert!(n > 0, "no handshake response");
    s
}

/// A preamble for `lane` and a handshake request from incarnation `uid` of
/// `me` to `to`.
pub fn handshake_bytes(to: &Address, me: &Address, uid: u64, lane: Lane) -> BytesMut {
    let mut out = BytesMut::new();
    Preamble::new(lane).encode(&mut out);
    Encoder::for_lane(Lane::Control)
        .encode(
            &Pdu::HandshakeRequest(Box::new(HandshakeRequest {
                version: PROTOCOL_VERSION,
                from: me.clone(),
                uid,
                to: to.clone(),
                auth: None,
            })),
            &mut out,
        )
        .unwrap();
    out
}

/// A preamble for the control lane and a stamped handshake request
/// (handshake version 2) from incarnation `uid` of `me` to `to`: once
/// answered, the node waits for the stamp that follows.
pub fn stamped_request_bytes(to: &Address, me: &Address, uid: u64) -> BytesMut {
    let mut out = BytesMut::new();
    Preamble::new(Lane::Control).encode(&mut out);
    let request = HandshakeRequest {
        version: HANDSHAKE_VERSION_STAMPED,
        from: me.clone(),
        uid,
        to: to.clone(),
        auth: None,
    };
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeRequest(Box::new(request)), &mut out)
        .unwrap();
    out
}

/// Reads until the peer closes; true if it did within `within`.
pub async fn closed_within(s: &mut TcpStream, within: std::time::Duration) -> bool {
    let mut sink = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut sink)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// This process's resident memory, from /proc/self/statm.
pub fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Accepts one connection on `listener` as the node `me`: reads the
/// preamble and the handshake request, answers `Accepted`. Returns the
/// connection's lane, the stream, and what followed the handshake.
pub async fn accept_as(listener: &TcpListener, me: &Address) -> (Lane, TcpStream, BytesMut) {
    let (mut s, _) = listener.accept().await.unwrap();
    let (lane, buf) = answer_handshake(&mut s, me).await;
    (lane, s, buf)
}

/// On an accepted connection: reads the preamble and the handshake
/// request, answers `Accepted` as the node `me`. Returns the connection's
/// lane and what followed the handshake.
pub async fn answer_handshake(s: &mut TcpStream, me: &Address) -> (Lane, BytesMut) {
    answer_handshake_as(s, me, 11).await
}

/// [`answer_handshake`] as incarnation `uid` of `me`.
pub async fn answer_handshake_as(s: &mut TcpStream, me: &Address, uid: u64) -> (Lane, BytesMut) {
    answer_handshake_with(s, me, uid, Features::SUPPORTED).await
}

/// [`answer_handshake_as`], advertising `features` only.
pub async fn answer_handshake_with(
    s: &mut TcpStream,
    me: &Address,
    uid: u64,
    features: Features,
) -> (Lane, BytesMut) {
    let (lane, buf) = read_handshake(s).await;
    respond_accepted_with(s, me, uid, features).await;
    (lane, buf)
}

/// On an accepted connection: reads the preamble and the handshake
/// request, and answers nothing yet. Returns the connection's lane and
/// what followed the handshake.
pub async fn read_handshake(s: &mut TcpStream) -> (Lane, BytesMut) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    while buf.len() < PREAMBLE_LEN {
        assert!(
            s.read_buf(&mut buf).await.unwrap() > 0,
            "closed in preamble"
        );
    }
    let lane = Preamble::decode(&buf).unwrap().unwrap().lane;
    let _ = buf.split_to(PREAMBLE_LEN);
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let used = loop {
        if let Some((pdu, used)) = decoder.decode_frame(&buf).unwrap() {
            assert!(matches!(pdu, Pdu::HandshakeRequest(_)), "{pdu:?}");
            break used;
        }
        assert!(
            s.read_buf(&mut buf).await.unwrap() > 0,
            "closed in handshake"
        );
    };
    let _ = buf.split_to(used);
    (lane, buf)
}

/// Answers a handshake request already read from `s`: `Accepted`, as
/// incarnation `uid` of the node `me`, advertising the features a node of
/// this build decodes.
pub async fn respond_accepted(s: &mut TcpStream, me: &Address, uid: u64) {
    respond_accepted_with(s, me, uid, Features::SUPPORTED).await
}

/// [`respond_accepted`] advertising `features` only: with
/// `Features::default()`, the answer of a peer built before features
/// were advertised.
pub async fn respond_accepted_with(s: &mut TcpStream, me: &Address, uid: u64, features: Features) {
    let mut out = BytesMut::new();
    let response = HandshakeResponse {
        version: PROTOCOL_VERSION,
        status: HandshakeStatus::Accepted,
        from: me.clone(),
        uid,
        auth: None,
        reason: features.list(),
    };
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeResponse(Box::new(response)), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
}
