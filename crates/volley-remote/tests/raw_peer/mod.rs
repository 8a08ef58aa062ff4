//! A hand-driven peer: raw TCP connections that speak the wire protocol
//! byte by byte, for tests that need frames no well-behaved node sends.
#![allow(dead_code)]

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Encoder, HandshakeRequest, HandshakeResponse, HandshakeStatus,
    Lane, Pdu, Preamble, PREAMBLE_LEN, PROTOCOL_VERSION,
};

pub async fn connect(to: &Address) -> TcpStream {
    TcpStream::connect((to.host(), to.port())).await.unwrap()
}

/// An ordinary-lane connection that completed a valid handshake as node
/// "mallory".
pub async fn handshaken(to: &Address) -> TcpStream {
    let mut s = connect(to).await;
    let mut out = BytesMut::new();
    Preamble::new(Lane::Ordinary).encode(&mut out);
    let me: Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
    Encoder::for_lane(Lane::Control)
        .encode(
            &Pdu::HandshakeRequest(Box::new(HandshakeRequest {
                version: PROTOCOL_VERSION,
                from: me,
                uid: 7,
                to: to.clone(),
                auth_token: None,
            })),
            &mut out,
        )
        .unwrap();
    s.write_all(&out).await.unwrap();
    let mut resp = [0u8; 512];
    let n = s.read(&mut resp).await.unwrap();
    assert!(n > 0, "no handshake response");
    s
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
    let mut out = BytesMut::new();
    let response = HandshakeResponse {
        version: PROTOCOL_VERSION,
        status: HandshakeStatus::Accepted,
        from: me.clone(),
        uid: 11,
        auth_token: None,
        reason: "",
    };
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeResponse(Box::new(response)), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
    (lane, buf)
}
