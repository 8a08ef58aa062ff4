//! Declarations from a raw peer, for the suites that measure what the
//! refs a peer declares cost the node.

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use volley_remote::serialization::SerializerId;
use volley_remote::wire::{Address, Encoder, Lane, MessageHeader, Pdu, RefDeclaration, RefId};

use super::handshaken_as;
use crate::common::{eventually, Node, CALC_ID};

/// The first lasting id a volley peer gives out.
pub const FIRST_ID: u32 = 4097;

/// A raw peer's connection, claiming node `mallory<n>`.
pub async fn connect_as_mallory(to: &Address, n: u32) -> TcpStream {
    let me: Address = format!("volley://mallory{n}@127.0.0.1:9").parse().unwrap();
    handshaken_as(to, &me, 100 + u64::from(n), Lane::Ordinary).await
}

/// Declares ids `FIRST_ID..` as `path(i)` with `uid(i)`, written a few
/// kilobytes at a time: the test's own buffers stay small, so that what
/// the process holds is the node's.
pub async fn declare(
    s: &mut TcpStream,
    count: u32,
    path: impl Fn(u32) -> String,
    uid: impl Fn(u32) -> u64,
) {
    let enc = Encoder::for_lane(Lane::Ordinary);
    let mut out = BytesMut::with_capacity(48 * 1024);
    for i in 0..count {
        let path = path(i);
        let declaration = RefDeclaration {
            id: RefId::new(FIRST_ID + i).unwrap(),
            uid: uid(i),
            path: &path,
        };
        enc.encode(&Pdu::RefDeclaration(declaration), &mut out)
            .unwrap();
        if out.len() > 32 * 1024 {
            if s.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
    let _ = s.write_all(&out).await;
}

/// Sends a message for an undeclared id on `s` and waits for its dead
/// letter: everything sent on `s` before it has been read.
pub async fn read_so_far(n: &Node, s: &mut TcpStream) {
    let mut out = BytesMut::new();
    let header = MessageHeader {
        recipient: RefId::new(5).unwrap(),
        sender: None,
        serializer: SerializerId::BINCODE,
        type_id: CALC_ID,
    };
    Encoder::for_lane(Lane::Ordinary)
        .user_message_with(&mut out, &header, |_| Ok(()))
        .unwrap();
    let before = n.system.dead_letter_count();
    s.write_all(&out).await.unwrap();
    eventually("a marker dead letter", || {
        n.system.dead_letter_count() > before
    })
    .await;
}

/// Waits until the node's import tables are all gone.
pub async fn all_closed(n: &Node) {
    eventually("every import table dropped", || {
        n.remoting.imported_ref_bytes() == 0
    })
    .await;
}
