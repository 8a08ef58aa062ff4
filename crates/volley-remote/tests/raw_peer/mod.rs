//! A hand-driven peer: raw TCP connections that speak the wire protocol
//! byte by byte, for tests that need frames no well-behaved node sends.
#![allow(dead_code)]

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use volley_remote::wire::{
    Address, Encoder, HandshakeRequest, Lane, Pdu, Preamble, PROTOCOL_VERSION,
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
