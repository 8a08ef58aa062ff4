//! An ask's request carries its reply handle inline (a Request frame,
//! docs/wire-protocol.md §5.5b): no declaration per ask, the reply names
//! the handle's correlation id, and a message holding two of this node's
//! reply handles carries the first inline and declares the second.

use crate::common;
use crate::raw_peer;

use bytes::BytesMut;
use common::{node, node_settings, Node, SUM_ID, T};
use raw_peer::answer_handshake;
use raw_peer::hostile::*;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo};
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Lane, Pdu, PduKind, Reply, REQUEST_REPLY_REF,
};
use volley_remote::{Registry, RemoteSettings, Remoting};

/// The frames of user traffic a raw node read from the real node asking
/// it, up to and including the first Request.
struct Seen {
    kinds: Vec<PduKind>,
    correlation: u64,
    reply_to: u32,
}

/// A raw node at `listener` that reads the asking node's ordinary lane
/// until the first Request, and reports what it saw.
async fn raw_asked_node(
    listener: TcpListener,
    me: Address,
) -> tokio::sync::oneshot::Receiver<Seen> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut tx = Some(tx);
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let (lane, mut buf) = answer_handshake(&mut s, &me).await;
            if lane != Lane::Ordinary {
                // Keep the other lanes open, unread.
                tokio::spawn(async move {
                    let mut sink = [0u8; 1024];
                    while s.read(&mut sink).await.unwrap_or(0) > 0 {}
                });
                continue;
            }
            let decoder = Decoder::new(DecoderConfig::for_lane(lane));
            let mut kinds = Vec::new();
            loop {
                while let Ok(Some((pdu, used))) = decoder.decode_frame(&buf) {
                    kinds.push(pdu.kind());
                    if let Pdu::Request(r) = pdu {
                        let CalcOnWire::Add { reply_to, .. } =
                            BincodeSerializer.decode(r.message.payload).unwrap();
                        let seen = Seen {
                            kinds: std::mem::take(&mut kinds),
                            correlation: r.correlation,
                            reply_to,
                        };
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(seen);
                        }
                    }
                    let _ = buf.split_to(used);
                }
                if s.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                    break;
                }
            }
        }
    });
    rx
}

/// What the peer sees of a remote ask from a task: one Request whose
/// payload names ref id 0, no ReplyHandleDeclaration; and a Reply naming
/// the Request's correlation id, from the asked node, completes the ask.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_one_request_frame_and_a_reply_to_its_correlation_completes_it() {
    let a = node("alpha", RemoteSettings::default()).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let asked: Address = format!("volley://asked@127.0.0.1:{port}").parse().unwrap();
    let seen = raw_asked_node(listener, asked.clone()).await;
    let calc = a
        .remoting
        .resolve::<common::Calc>(&format!("{asked}/user/calc"))
        .unwrap();
    let ask = tokio::spawn(async move {
        calc.ask(
            |reply_to| common::Calc::Add {
                a: 1,
                b: 2,
                reply_to,
            },
            T,
        )
        .await
    });
    let seen = tokio::time::timeout(T, seen).await.unwrap().unwrap();
    assert_eq!(seen.reply_to, REQUEST_REPLY_REF);
    assert!(
        !seen.kinds.contains(&PduKind::ReplyHandleDeclaration),
        "the reply handle was declared as well: {:?}",
        seen.kinds
    );
    assert_eq!(seen.kinds.last(), Some(&PduKind::Request));
    // The asked node answers on its own connection to the asker.
    let mut s = handshake_as(a.remoting.address(), Lane::Ordinary, &asked).await;
    let mut payload = BytesMut::new();
    BincodeSerializer.encode(&3i64, &mut payload).unwrap();
    let reply = Pdu::Reply(Reply {
        correlation: seen.correlation,
        serializer: SerializerId::BINCODE,
        type_id: SUM_ID,
        payload: &payload,
    });
    s.write_all(&frames(Lane::Ordinary, &[reply]))
        .await
        .unwrap();
    let outcome = tokio::time::timeout(T, ask).await.unwrap().unwrap();
    assert_eq!(outcome, Ok(3));
    a.system.terminate().await;
}

/// A message holding two reply handles of the sending node.
#[derive(Debug, Serialize, Deserialize)]
struct Both {
    first: ReplyTo<i64>,
    second: ReplyTo<i64>,
}

const BOTH_ID: u32 = 200;

/// Answers both handles of every `Both`: 1 to the first, 2 to the second.
struct AnswersBoth;

impl Actor for AnswersBoth {
    type Msg = Both;
    fn handle(&mut self, _ctx: &mut Context<Self>, both: Both) -> HandleResult {
        both.first.tell(1);
        both.second.tell(2);
        Ok(())
    }
}

/// Hands the reply handle of every ask it gets to the test, unanswered.
struct Keeper(tokio::sync::mpsc::UnboundedSender<ReplyTo<i64>>);

impl Actor for Keeper {
    type Msg = ReplyTo<i64>;
    fn handle(&mut self, _ctx: &mut Context<Self>, reply_to: ReplyTo<i64>) -> HandleResult {
        let _ = self.0.send(reply_to);
        Ok(())
    }
}

async fn both_node(name: &str) -> Node {
    let system = ActorSystem::with_settings(name, node_settings()).unwrap();
    let mut registry = Registry::default();
    registry.register::<Both>(BOTH_ID).unwrap();
    registry.register::<i64>(SUM_ID).unwrap();
    let remoting = Remoting::start_with(&system, registry, RemoteSettings::default())
        .await
        .unwrap();
    Node { system, remoting }
}

/// Two of the asking node's reply handles in one message (the first goes
/// inline, the second is declared) each get their own answer, in both
/// orders of the fields.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reply_handles_in_one_message_each_get_their_answer() {
    let a = both_node("alpha").await;
    let b = both_node("beta").await;
    b.system.spawn("both", Props::new(|| AnswersBoth)).unwrap();
    let both: ActorRef<Both> = a
        .remoting
        .resolve(&format!("{}/user/both", b.remoting.address()))
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let keeper = a
        .system
        .spawn_anonymous(Props::new(move || Keeper(tx.clone())))
        .unwrap();
    for kept_first in [true, false] {
        // An ask to a local actor that keeps its handle: the handle then
        // travels in the remote ask's message next to that ask's own.
        let keeper = keeper.clone();
        let kept_ask = tokio::spawn(async move { keeper.ask(|r| r, T).await });
        let kept = tokio::time::timeout(T, rx.recv()).await.unwrap().unwrap();
        let outer = both
            .ask(
                |own| match kept_first {
                    true => Both {
                        first: kept,
                        second: own,
                    },
                    false => Both {
                        first: own,
                        second: kept,
                    },
                },
                T,
            )
            .await;
        let kept_answer = tokio::time::timeout(T, kept_ask).await.unwrap().unwrap();
        let (own, kept) = match kept_first {
            true => (2, 1),
            false => (1, 2),
        };
        assert_eq!(outer, Ok(own), "kept first: {kept_first}");
        assert_eq!(kept_answer, Ok(kept), "kept first: {kept_first}");
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Ref id 0 means a request's own handle only inside a Request: in a plain
/// user message it is an undeclared ref, so the message is a dead letter
/// and the connection stays up (the Request after it is handled, and its
/// answer, for a peer this node does not dial back, is a dead letter too).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ref_id_zero_outside_a_request_is_an_undeclared_ref() {
    let b = node("beta", RemoteSettings::default()).await;
    common::spawn_calculator(&b, "calc");
    let ghost = trap("ghost").await;
    let addr = b.remoting.address().clone();
    let mut s = handshake_as(&addr, Lane::Ordinary, &ghost.address).await;
    let calc = format!("{addr}/user/calc");
    let mut out = declarations(&[&calc]);
    out.extend_from_slice(&add_frame(1, REQUEST_REPLY_REF));
    let before = b.system.dead_letter_count();
    s.write_all(&out).await.unwrap();
    wait_for("the message dead-lettered", || {
        b.system.dead_letter_count() > before
    })
    .await;
    let after_bad = b.system.dead_letter_count();
    s.write_all(&add_request(1, 77)).await.unwrap();
    wait_for("the request's answer dead-lettered", || {
        b.system.dead_letter_count() > after_bad
    })
    .await;
    b.system.terminate().await;
}
