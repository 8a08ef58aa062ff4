//! How an inbound connection that breaks the protocol ends (issue 29,
//! item 9): a wrong preamble byte closes it as soon as that byte arrives,
//! not after the handshake timeout; a codec error past the preamble is
//! answered with a Disassociate (reason: protocol error) before the close
//! (wire-protocol §3, §8).

use crate::common;
use crate::raw_peer;

use std::time::Duration;

use bytes::BytesMut;
use common::node;
use raw_peer::{closed_within, connect, handshake_bytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, DisassociateReason, HandshakeStatus, Lane, Pdu, Preamble,
    PREAMBLE_LEN,
};
use volley_remote::RemoteSettings;

/// The node's handshake timeout: a connection held until then was not
/// closed at its wrong byte.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Well before the handshake timeout, with room for a loaded machine.
const PROMPTLY: Duration = Duration::from_secs(3);

fn patient() -> RemoteSettings {
    RemoteSettings {
        handshake_timeout: HANDSHAKE_TIMEOUT,
        ..RemoteSettings::default()
    }
}

/// Everything `s` carries until the node closes it, within `within`;
/// `None` if it stays open.
pub(crate) async fn read_to_end(s: &mut TcpStream, within: Duration) -> Option<BytesMut> {
    let mut buf = BytesMut::new();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, s.read_buf(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(buf),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

/// The frames in `bytes`, decoded as the control lane's, up to the first
/// that does not decode.
pub(crate) fn frames(bytes: &[u8]) -> Vec<Pdu<'_>> {
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let mut at = 0;
    let mut out = Vec::new();
    while let Ok(Some((pdu, used))) = decoder.decode_frame(&bytes[at..]) {
        out.push(pdu);
        at += used;
    }
    out
}

/// Issue 29: the first byte that differs from the preamble, followed by
/// silence, closes the connection at once. Before, the node waited for
/// six bytes, so these were held for the handshake timeout.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_preamble_byte_then_silence_is_closed_at_once() {
    let b = node("preamble", patient()).await;
    let addr = b.remoting.address().clone();
    let wrong: [&[u8]; 4] = [b"X", b"VX", b"VLLZ", b"VLLY\x07"];
    for bytes in wrong {
        let mut s = connect(&addr).await;
        s.write_all(bytes).await.unwrap();
        assert!(
            closed_within(&mut s, PROMPTLY).await,
            "{bytes:?} then silence held open for {PROMPTLY:?} (handshake timeout {HANDSHAKE_TIMEOUT:?})"
        );
    }
    // A right prefix is not closed: it may be a slow peer.
    let mut s = connect(&addr).await;
    s.write_all(&Preamble::new(Lane::Ordinary).to_bytes()[..PREAMBLE_LEN - 1])
        .await
        .unwrap();
    assert!(!closed_within(&mut s, Duration::from_millis(300)).await);
    b.system.terminate().await;
}

/// Issue 29: a frame that does not decode, after an accepted handshake, is
/// answered with a Disassociate naming the protocol error, read before the
/// connection closes; the node closes at once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codec_error_is_answered_with_disassociate_before_the_close() {
    let b = node("codec", patient()).await;
    let addr = b.remoting.address().clone();
    let me: Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
    let mut s = connect(&addr).await;
    s.write_all(&handshake_bytes(&addr, &me, 7, Lane::Ordinary))
        .await
        .unwrap();
    // A frame of an unknown kind.
    s.write_all(&[1, 0, 0, 0, 0x7f]).await.unwrap();
    let got = read_to_end(&mut s, PROMPTLY)
        .await
        .expect("the connection stayed open after a codec error");
    let pdus = frames(&got);
    assert!(
        matches!(pdus.first(), Some(Pdu::HandshakeResponse(r)) if r.status == HandshakeStatus::Accepted),
        "{pdus:?}"
    );
    let goodbye = pdus.iter().find_map(|pdu| match pdu {
        Pdu::Disassociate(d) => Some(d),
        _ => None,
    });
    let goodbye = goodbye.unwrap_or_else(|| panic!("no Disassociate before the close: {pdus:?}"));
    assert_eq!(goodbye.reason, DisassociateReason::ProtocolError);
    assert!(
        goodbye.text.contains("unknown PDU kind"),
        "{}",
        goodbye.text
    );
    b.system.terminate().await;
}
