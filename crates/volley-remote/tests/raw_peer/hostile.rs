//! Frames and sockets for the hostile-peer suites: a raw peer that claims
//! addresses, declares refs and sends messages, and a listener that counts
//! the connections a node makes to it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::{
    Address, Encoder, HandshakeRequest, Lane, MessageHeader, Pdu, Preamble, RefDeclaration, RefId,
    PROTOCOL_VERSION,
};

use crate::common::{CALC_ID, SUM_ID, T};

/// `Calc::Add` as a raw peer writes it: refs are ids on the connection.
#[derive(Serialize, Deserialize)]
pub enum CalcOnWire {
    /// As `Calc::Add`.
    Add { a: i64, b: i64, reply_to: u32 },
}

/// A listener that counts the connections made to it.
pub struct Trap {
    pub address: Address,
    pub accepted: Arc<AtomicUsize>,
}

pub async fn trap(name: &str) -> Trap {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            held.push(s);
        }
    });
    Trap {
        address: format!("volley://{name}@127.0.0.1:{port}").parse().unwrap(),
        accepted,
    }
}

/// A listener that counts the connections made to it and answers each
/// handshake `Accepted`, as incarnation `uid`, whatever node was asked
/// for: what a check of a claimed address finds at a port someone else
/// listens on.
pub async fn impostor(uid: u64) -> Trap {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let address: Address = format!("volley://impostor@127.0.0.1:{port}")
        .parse()
        .unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let me = address.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let me = me.clone();
            tokio::spawn(async move {
                super::answer_handshake_as(&mut s, &me, uid).await;
                // Held until the checker closes it.
                let mut sink = [0u8; 64];
                while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
            });
        }
    });
    Trap { address, accepted }
}

/// A connection to `to` on `lane` that handshook as `from`.
pub async fn handshake_as(to: &Address, lane: Lane, from: &Address) -> TcpStream {
    let mut s = TcpStream::connect((to.host(), to.port())).await.unwrap();
    let mut out = BytesMut::new();
    Preamble::new(lane).encode(&mut out);
    let request = HandshakeRequest {
        version: PROTOCOL_VERSION,
        from: from.clone(),
        uid: 11,
        to: to.clone(),
        auth: None,
    };
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeRequest(Box::new(request)), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
    let mut resp = [0u8; 512];
    assert!(s.read(&mut resp).await.unwrap() > 0, "no handshake answer");
    s
}

/// Declarations of `paths` as ids 1, 2, ... on the ordinary lane.
pub fn declarations(paths: &[&str]) -> BytesMut {
    let pdus: Vec<Pdu<'_>> = paths
        .iter()
        .zip(1..)
        .map(|(path, n)| {
            Pdu::RefDeclaration(RefDeclaration {
                id: id(n),
                uid: 0,
                path,
            })
        })
        .collect();
    frames(Lane::Ordinary, &pdus)
}

/// Encodes `pdus` as one lane's frames.
pub fn frames(lane: Lane, pdus: &[Pdu<'_>]) -> BytesMut {
    let mut out = BytesMut::new();
    for pdu in pdus {
        Encoder::for_lane(lane).encode(pdu, &mut out).unwrap();
    }
    out
}

pub fn id(n: u32) -> RefId {
    RefId::new(n).unwrap()
}

/// An `Add` from the raw peer to its declared id `to`, replying to `reply`.
pub fn add_frame(to: u32, reply: u32) -> BytesMut {
    let add = CalcOnWire::Add {
        a: 1,
        b: 2,
        reply_to: reply,
    };
    user_frame(to, CALC_ID, &add)
}

/// `value`, of the registered type `type_id`, to the raw peer's declared id
/// `to`.
fn user_frame<V: Serialize + serde::de::DeserializeOwned>(
    to: u32,
    type_id: u32,
    value: &V,
) -> BytesMut {
    let mut payload = BytesMut::new();
    BincodeSerializer.encode(value, &mut payload).unwrap();
    frames(
        Lane::Ordinary,
        &[Pdu::UserMessage(volley_remote::wire::UserMessage {
            header: MessageHeader {
                recipient: id(to),
                sender: None,
                serializer: SerializerId::BINCODE,
                type_id,
            },
            payload: &payload,
        })],
    )
}

/// `Add { 1, 2 }` to the declared id `to` as a Request whose reply handle
/// (ref id 0 in the payload) is the sender's `correlation`.
pub fn add_request(to: u32, correlation: u64) -> BytesMut {
    let mut payload = BytesMut::new();
    let add = CalcOnWire::Add {
        a: 1,
        b: 2,
        reply_to: 0,
    };
    BincodeSerializer.encode(&add, &mut payload).unwrap();
    frames(
        Lane::Ordinary,
        &[Pdu::Request(volley_remote::wire::Request {
            correlation,
            message: volley_remote::wire::UserMessage {
                header: MessageHeader {
                    recipient: id(to),
                    sender: None,
                    serializer: SerializerId::BINCODE,
                    type_id: CALC_ID,
                },
                payload: &payload,
            },
        })],
    )
}

pub async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + T;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An `i64` (the registered sum type) to the raw peer's declared id `to`.
pub fn sum_frame(to: u32, n: i64) -> BytesMut {
    user_frame(to, SUM_ID, &n)
}
