//! An ask's request carries its reply handle inline (a Request frame,
//! docs/wire-protocol.md §5.5b): no declaration per ask, the reply names
//! the handle's correlation id, and a message holding two of this node's
//! reply handles carries the first inline and declares the second.

use crate::common;
use crate::raw_peer;

use bytes::BytesMut;
use common::{node, node_settings, Node, SUM_ID, T};
use raw_peer::answer_handshake_with;
use raw_peer::hostile::*;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use volley::{Actor, ActorRef, ActorSystem, AskError, Context, HandleResult, Props, ReplyTo};
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Features, Lane, Pdu, PduKind, Reply, REQUEST_REPLY_REF,
};
use volley_remote::{Registry, RemoteSettings, Remoting};

/// The frames of user traffic a raw node read from the real node asking
/// it, up to and including the first message carrying an ask.
struct Seen {
    kinds: Vec<PduKind>,
    /// The ask's reply handle as the asking node knows it: from the
    /// Request, or from the ReplyHandleDeclaration of the ref the message
    /// names.
    correlation: u64,
    reply_to: u32,
}

/// A raw node at `listener` that answers handshakes advertising
/// `features`, reads the asking node's ordinary lanes, and reports each
/// ask it finds there (a Request, or a UserMessage) with what preceded it.
fn raw_asked_node(
    listener: TcpListener,
    me: Address,
    features: Features,
) -> mpsc::UnboundedReceiver<Seen> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let (lane, mut buf) = answer_handshake_with(&mut s, &me, 11, features).await;
            if lane != Lane::Ordinary {
                keep_open(s);
                continue;
            }
            let tx = tx.clone();
            tokio::spawn(async move {
                while let Some(seen) = read_until_ask(&mut s, &mut buf).await {
                    let _ = tx.send(seen);
                }
            });
        }
    });
    rx
}

/// The next ask a raw node reports.
async fn next_ask(asks: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    let next = tokio::time::timeout(T, asks.recv()).await;
    next.expect("an ask within the time")
        .expect("the raw node runs")
}

/// Keeps a raw node's connection open, reading and ignoring what comes.
fn keep_open(mut s: TcpStream) {
    tokio::spawn(async move {
        let mut sink = [0u8; 1024];
        while s.read(&mut sink).await.unwrap_or(0) > 0 {}
    });
}

/// Reads the frames of an ordinary lane, starting with what `buf` holds,
/// up to the next message that carries an ask; `None` if the connection
/// closes first.
async fn read_until_ask(s: &mut TcpStream, buf: &mut BytesMut) -> Option<Seen> {
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Ordinary));
    let mut kinds = Vec::new();
    let mut handles = std::collections::HashMap::new();
    loop {
        while let Ok(Some((pdu, used))) = decoder.decode_frame(buf) {
            kinds.push(pdu.kind());
            let asked = match pdu {
                Pdu::ReplyHandleDeclaration(d) => {
                    handles.insert(d.id.get(), d.correlation);
                    None
                }
                Pdu::Request(r) => Some((r.message.payload, Some(r.correlation))),
                Pdu::UserMessage(m) => Some((m.payload, None)),
                _ => None,
            };
            let seen = asked.map(|(payload, correlation)| {
                let CalcOnWire::Add { reply_to, .. } = BincodeSerializer.decode(payload).unwrap();
                let correlation = correlation
                    .or_else(|| handles.get(&reply_to).copied())
                    .unwrap_or(0);
                Seen {
                    kinds: std::mem::take(&mut kinds),
                    correlation,
                    reply_to,
                }
            });
            let _ = buf.split_to(used);
            if seen.is_some() {
                return seen;
            }
        }
        if s.read_buf(buf).await.unwrap_or(0) == 0 {
            return None;
        }
    }
}

/// `calc.ask(Add { 1, 2 })` at the node `asked` from a task of `a`.
fn ask_add(a: &Node, asked: &Address) -> tokio::task::JoinHandle<Result<i64, AskError>> {
    let calc = a
        .remoting
        .resolve::<common::Calc>(&format!("{asked}/user/calc"))
        .unwrap();
    tokio::spawn(async move {
        calc.ask(
            |reply_to| common::Calc::Add {
                a: 1,
                b: 2,
                reply_to,
            },
            T,
        )
        .await
    })
}

/// The asked node's answer: `3` as a Reply naming `correlation`, on its
/// own connection to the asker `a`.
async fn answer(a: &Node, asked: &Address, correlation: u64) {
    let mut s = handshake_as(a.remoting.address(), Lane::Ordinary, asked).await;
    let mut payload = BytesMut::new();
    BincodeSerializer.encode(&3i64, &mut payload).unwrap();
    let reply = Pdu::Reply(Reply {
        correlation,
        serializer: SerializerId::BINCODE,
        type_id: SUM_ID,
        payload: &payload,
    });
    s.write_all(&frames(Lane::Ordinary, &[reply]))
        .await
        .unwrap();
}

/// A raw node listening on a port of its own, and its address.
async fn raw_node_address() -> (TcpListener, Address) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let asked = format!("volley://asked@127.0.0.1:{port}").parse().unwrap();
    (listener, asked)
}

/// What the peer sees of a remote ask from a task once the connection is
/// up: one Request whose payload names ref id 0, no
/// ReplyHandleDeclaration; and a Reply naming the Request's correlation
/// id, from the asked node, completes the ask. (An ask sent before the
/// peer's handshake has said what it decodes declares its handle.)
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_one_request_frame_and_a_reply_to_its_correlation_completes_it() {
    let a = node("alpha", RemoteSettings::default()).await;
    let (listener, asked) = raw_node_address().await;
    let mut asks = raw_asked_node(listener, asked.clone(), Features::SUPPORTED);
    let first = ask_add(&a, &asked);
    answer(&a, &asked, next_ask(&mut asks).await.correlation).await;
    assert_eq!(
        tokio::time::timeout(T, first).await.unwrap().unwrap(),
        Ok(3)
    );
    let second = ask_add(&a, &asked);
    let seen = next_ask(&mut asks).await;
    assert_eq!(seen.reply_to, REQUEST_REPLY_REF);
    assert_eq!(
        seen.kinds,
        [PduKind::Request],
        "the reply handle was declared as well"
    );
    answer(&a, &asked, seen.correlation).await;
    assert_eq!(
        tokio::time::timeout(T, second).await.unwrap().unwrap(),
        Ok(3)
    );
    a.system.terminate().await;
}

/// A peer whose handshake advertises no features (as every peer built
/// before features were advertised answers) is never sent a Request: each
/// ask's reply handle is declared with a ReplyHandleDeclaration, the
/// message is a plain UserMessage naming it, and a Reply to the declared
/// correlation completes the ask.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_does_not_advertise_requests_gets_declared_reply_handles() {
    let a = node("alpha", RemoteSettings::default()).await;
    let (listener, asked) = raw_node_address().await;
    let mut asks = raw_asked_node(listener, asked.clone(), Features::default());
    for _ in 0..3 {
        let ask = ask_add(&a, &asked);
        let seen = next_ask(&mut asks).await;
        assert!(
            !seen.kinds.contains(&PduKind::Request),
            "a Request went to a peer that does not decode it: {:?}",
            seen.kinds
        );
        assert_eq!(seen.kinds.last(), Some(&PduKind::UserMessage));
        assert_ne!(seen.reply_to, REQUEST_REPLY_REF);
        assert_ne!(
            seen.correlation, 0,
            "the reply handle was not declared: {:?}",
            seen.kinds
        );
        answer(&a, &asked, seen.correlation).await;
        assert_eq!(tokio::time::timeout(T, ask).await.unwrap().unwrap(), Ok(3));
    }
    a.system.terminate().await;
}

/// What a raw node that comes back without `requests` reports: the asks
/// on its ordinary lane's first connection; that its second connection has
/// read its handshake (and waits for the gate to answer it); and the asks
/// on that connection.
struct Downgrade {
    first: mpsc::UnboundedReceiver<Seen>,
    redialed: tokio::sync::oneshot::Receiver<()>,
    second: mpsc::UnboundedReceiver<Seen>,
}

/// A raw node at `listener` whose ordinary lane's first connection
/// advertises `requests` and is closed at the first Request; it answers
/// the next one, once `gate` opens, advertising nothing.
fn downgrading_node(
    listener: TcpListener,
    me: Address,
    gate: tokio::sync::oneshot::Receiver<()>,
) -> Downgrade {
    let (first_tx, first) = mpsc::unbounded_channel();
    let (redialed_tx, redialed) = tokio::sync::oneshot::channel();
    let (second_tx, second) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (mut redialed_tx, mut gate) = (Some(redialed_tx), Some(gate));
        let mut ordinary = 0;
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let (lane, mut buf) = raw_peer::read_handshake(&mut s).await;
            if lane != Lane::Ordinary {
                raw_peer::respond_accepted(&mut s, &me, 11).await;
                keep_open(s);
                continue;
            }
            ordinary += 1;
            if ordinary == 1 {
                raw_peer::respond_accepted(&mut s, &me, 11).await;
                while let Some(seen) = read_until_ask(&mut s, &mut buf).await {
                    let request = seen.kinds.contains(&PduKind::Request);
                    let _ = first_tx.send(seen);
                    if request {
                        break; // and the connection closes
                    }
                }
                continue;
            }
            let _ = redialed_tx.take().map(|tx| tx.send(()));
            if let Some(gate) = gate.take() {
                let _ = gate.await;
            }
            raw_peer::respond_accepted_with(&mut s, &me, 11, Features::default()).await;
            while let Some(seen) = read_until_ask(&mut s, &mut buf).await {
                let _ = second_tx.send(seen);
            }
        }
    });
    Downgrade {
        first,
        redialed,
        second,
    }
}

/// An ask whose request is queued on the lane: polled once, and kept
/// (dropped, the ask ends).
type QueuedAsk = std::pin::Pin<Box<dyn std::future::Future<Output = Result<i64, AskError>> + Send>>;

fn queue_ask(calc: ActorRef<common::Calc>) -> QueuedAsk {
    let mut ask: QueuedAsk = Box::pin(async move {
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
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(ask.as_mut().poll(&mut cx).is_pending());
    ask
}

/// A peer that advertised `requests` comes back at the same address
/// without it (an older build): the Requests queued for it meanwhile are
/// never written to it but dropped and counted as dead letters, and the
/// next ask reaches it with a declared reply handle and is answered.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_queued_for_a_peer_that_comes_back_without_them_are_dropped_and_counted() {
    let a = node("alpha", RemoteSettings::default()).await;
    let (listener, asked) = raw_node_address().await;
    let (open, gate) = tokio::sync::oneshot::channel();
    let mut downgrade = downgrading_node(listener, asked.clone(), gate);
    // Asks until one goes as a Request, at which the node closes the
    // connection. The first goes as one when the lane had read the node's
    // handshake (which advertises `requests`) before the ask was queued;
    // queued before, it goes with a declared reply handle, is answered,
    // and the next goes as a Request.
    let mut asks = 0;
    let second = loop {
        asks += 1;
        assert!(asks <= 3, "no ask went as a Request");
        let ask = ask_add(&a, &asked);
        let seen = next_ask(&mut downgrade.first).await;
        if seen.kinds.contains(&PduKind::Request) {
            assert_eq!(seen.kinds.last(), Some(&PduKind::Request));
            break ask;
        }
        answer(&a, &asked, seen.correlation).await;
        assert_eq!(tokio::time::timeout(T, ask).await.unwrap().unwrap(), Ok(3));
    };
    tokio::time::timeout(T, downgrade.redialed)
        .await
        .unwrap()
        .unwrap();
    let calc = a
        .remoting
        .resolve::<common::Calc>(&format!("{asked}/user/calc"))
        .unwrap();
    let before = a.system.dead_letter_count();
    let queued: Vec<QueuedAsk> = (0..3).map(|_| queue_ask(calc.clone())).collect();
    open.send(()).unwrap();
    common::eventually("the queued Requests are counted as dead letters", || {
        a.system.dead_letter_count() >= before + 3
    })
    .await;
    let fresh = ask_add(&a, &asked);
    let seen = next_ask(&mut downgrade.second).await;
    assert!(
        !seen.kinds.contains(&PduKind::Request),
        "a Request reached the peer that does not decode it: {:?}",
        seen.kinds
    );
    answer(&a, &asked, seen.correlation).await;
    let outcome = tokio::time::timeout(T, fresh).await.unwrap().unwrap();
    assert_eq!(outcome, Ok(3));
    drop(queued);
    second.abort();
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
