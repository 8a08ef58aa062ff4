//! Apache Pekko's `artery.tcp.TcpFramingSpec` (the stage that cuts a TCP
//! byte stream into frames), carried over to a volley node's inbound
//! connections, driven by a hand-written peer (`raw_peer`) whose bytes
//! reach the node in pieces of every size:
//!
//! - "parse frames from random chunks", "grab streamId from connection
//!   header" (also when it arrives in pieces) and "include streamId in
//!   each frame": a preamble, a handshake, a declaration and 300 messages,
//!   written in pieces of 1 to 9 bytes, are all delivered, in order:
//!   `a_stream_cut_into_small_pieces_is_read_whole_and_in_order`.
//! - "report truncated frames" and "work with empty stream": a connection
//!   that ends inside a frame delivers the whole frames before it and is
//!   closed; one that ends before its first byte is closed; the node goes
//!   on serving both kinds of peer:
//!   `a_stream_cut_inside_a_frame_or_before_its_first_byte_harms_nothing_else`.
//!
//! Skipped, with the reason: "reject invalid magic" / "reject wrong
//! magic": covered by `bad_input.rs` and `remote_bad_input.rs`; "use
//! default PEKK magic", "accept custom magic", "accept legacy AKKA magic":
//! volley has one preamble (wire-protocol.md §3), no configurable or
//! legacy magic.

use crate::common;
use crate::raw_peer;

use std::time::Duration;

use bytes::BytesMut;
use common::{node, Node, Relay, T};
use raw_peer::hostile::{declarations, sum_frame};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use volley_remote::wire::{Address, Lane};
use volley_remote::RemoteSettings;

fn relay(n: &Node, name: &str) -> (String, UnboundedReceiver<i64>) {
    let (tx, rx) = unbounded_channel();
    n.system
        .spawn(name, volley::Props::new(move || Relay(tx.clone())))
        .unwrap();
    (format!("{}/user/{name}", n.remoting.address()), rx)
}

/// The whole stream a peer `me` writes to `to` on the ordinary lane: its
/// preamble and handshake, the declaration of `path` as id 1, and `count`
/// numbers to it.
fn stream(to: &Address, me: &Address, path: &str, count: i64) -> BytesMut {
    let mut out = raw_peer::handshake_bytes(to, me, 7, Lane::Ordinary);
    out.extend_from_slice(&declarations(&[path]));
    for n in 0..count {
        out.extend_from_slice(&sum_frame(1, n));
    }
    out
}

/// Writes `bytes` in pieces of 1 to 9 bytes (a fixed pseudo-random
/// sequence), each sent on its own and now and then after a pause, so
/// that the node's reads end anywhere in a frame.
async fn write_in_pieces(s: &mut TcpStream, bytes: &[u8]) {
    s.set_nodelay(true).unwrap();
    let mut state: u32 = 12345;
    let mut at = 0;
    let mut pieces = 0u32;
    while at < bytes.len() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let len = (1 + (state >> 16) % 9) as usize;
        let end = (at + len).min(bytes.len());
        s.write_all(&bytes[at..end]).await.unwrap();
        at = end;
        pieces += 1;
        if pieces % 16 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}

async fn take(rx: &mut UnboundedReceiver<i64>, count: usize) -> Vec<i64> {
    let mut got = Vec::with_capacity(count);
    while got.len() < count {
        match tokio::time::timeout(T, rx.recv()).await {
            Ok(Some(n)) => got.push(n),
            _ => panic!("only {} of {count} arrived: {got:?}", got.len()),
        }
    }
    got
}

fn mallory(n: u32) -> Address {
    format!("volley://mallory{n}@127.0.0.1:9").parse().unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_into_small_pieces_is_read_whole_and_in_order() {
    let a = node("framing-a", RemoteSettings::default()).await;
    let (path, mut rx) = relay(&a, "sink");
    let to = a.remoting.address().clone();
    let bytes = stream(&to, &mallory(1), &path, 300);
    let mut s = raw_peer::connect(&to).await;
    write_in_pieces(&mut s, &bytes).await;
    assert_eq!(take(&mut rx, 300).await, (0..300).collect::<Vec<_>>());
    assert_eq!(a.system.dead_letter_count(), 0);
    a.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_inside_a_frame_or_before_its_first_byte_harms_nothing_else() {
    let a = node("truncated-a", RemoteSettings::default()).await;
    let (path, mut rx) = relay(&a, "sink");
    let to = a.remoting.address().clone();

    // An empty stream: connected, closed.
    drop(raw_peer::connect(&to).await);

    // Five whole messages, then half of the sixth, then the end.
    let whole = stream(&to, &mallory(2), &path, 5);
    let sixth = sum_frame(1, 5);
    let mut cut = whole.clone();
    cut.extend_from_slice(&sixth[..sixth.len() / 2]);
    let mut s = raw_peer::connect(&to).await;
    write_in_pieces(&mut s, &cut).await;
    s.shutdown().await.unwrap();
    assert_eq!(take(&mut rx, 5).await, (0..5).collect::<Vec<_>>());
    assert!(
        raw_peer::closed_within(&mut s, T).await,
        "the node kept a connection that ended inside a frame"
    );

    // Another peer's stream, after both, arrives whole.
    let mut s = raw_peer::connect(&to).await;
    write_in_pieces(&mut s, &stream(&to, &mallory(3), &path, 20)).await;
    assert_eq!(take(&mut rx, 20).await, (0..20).collect::<Vec<_>>());
    // The cut message never arrived.
    assert!(rx.try_recv().is_err());
    a.system.terminate().await;
}
