//! Message delivery and serialization across two nodes, ported from the
//! scenarios of Apache Pekko's remoting specs (the facts they check, not
//! their code):
//!
//! - `RemoteSendConsistencySpec`: ping a remote actor through a ref that
//!   came from the remote node and through a path (selection); a ref to a
//!   stopped actor does not reach a new actor of the same name; several
//!   actors doing request/response with remote echoes concurrently keep
//!   their order (through refs with a uid and through resolved paths).
//! - `RemoteMessageSerializationSpec`: a message just under the frame limit
//!   is delivered; one over it is dropped at the sender as a dead letter,
//!   with no disassociation; a local ref sent out and echoed back is the
//!   local actor again.
//! - `SerializationErrorSpec` / `TransientSerializationErrorSpec`: failures
//!   of the serializer when encoding (an error, a panic) and when decoding
//!   on the receiver (an error, a panic) lose only that message, are
//!   counted, and leave the association up.
//! - `LargeMessagesStreamSpec` (single-node part): small messages get
//!   through while a large one is on its way.
//! - `RemoteActorRefProviderSpec` (the parts on refs): a path at this
//!   node's own address resolves to the local actor; a remote path to a
//!   remote ref; a path with another scheme is refused.

use crate::common;

use common::tagged::Forward;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use common::{events_so_far, eventually, node_settings, record_events, Node, T};
use serde::{Deserialize, Serialize};
use volley::{Actor, ActorRef, ActorSystem, Context, DeadLetter, HandleResult, Props};
use volley_remote::serialization::{SerializeError, Serializer, SerializerId};
use volley_remote::{Registry, RemoteSettings, Remoting, RemotingEvent};
use volley_testkit::TestProbe;

/// The echo's protocol.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Echo {
    /// Answers `n` to the ref.
    Num(i64, ActorRef<i64>),
    /// Answers the echo's own ref (which carries its uid).
    Me(ActorRef<ActorRef<Echo>>),
    /// Sends the first ref back to the second.
    Bounce(ActorRef<i64>, ActorRef<ActorRef<i64>>),
    /// Answers the blob's length.
    Blob(#[serde(with = "as_byte_string")] Vec<u8>, ActorRef<i64>),
}

/// A blob as one byte string on the wire rather than element by element,
/// so that sending megabytes costs copies, not seconds of unoptimised
/// per-byte (de)serialization that a loaded machine stretches further.
mod as_byte_string {
    use serde::{de, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct Bytes;
        impl<'de> de::Visitor<'de> for Bytes {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

struct EchoActor;

impl Actor for EchoActor {
    type Msg = Echo;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Echo) -> HandleResult {
        match msg {
            Echo::Num(n, to) => to.tell(n),
            Echo::Me(to) => to.tell(ctx.myself()),
            Echo::Bounce(r, to) => to.tell(r),
            Echo::Blob(bytes, to) => to.tell(bytes.len() as i64),
        }
        Ok(())
    }
}

/// A message whose serializer fails on purpose, like Pekko's
/// `TestSerializer`: by its byte, when encoding (1: an error, 2: a panic)
/// or when decoding on the receiver (3: an error, 4: a panic).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Flaky(u8);

#[derive(Default)]
struct FlakySerializer;

impl Serializer<Flaky> for FlakySerializer {
    fn id(&self) -> SerializerId {
        SerializerId(SerializerId::FIRST_USER.0 + 7)
    }
    fn encode(&self, value: &Flaky, buf: &mut BytesMut) -> Result<(), SerializeError> {
        buf.put_u8(0xAA); // written before failing: must not reach the wire
        match value.0 {
            1 => Err(SerializeError::Encode {
                serializer: self.id(),
                source: "refused to encode".into(),
            }),
            2 => panic!("flaky encode panicked on purpose"),
            b => {
                buf.put_u8(b);
                Ok(())
            }
        }
    }
    fn decode(&self, bytes: &[u8]) -> Result<Flaky, SerializeError> {
        match bytes {
            [0xAA, 3] => Err(SerializeError::Decode {
                serializer: self.id(),
                source: "refused to decode".into(),
            }),
            [0xAA, 4] => panic!("flaky decode panicked on purpose"),
            [0xAA, b] => Ok(Flaky(*b)),
            _ => Err(SerializeError::Decode {
                serializer: self.id(),
                source: "corrupt payload".into(),
            }),
        }
    }
}

/// Counts the `Flaky` messages that arrive, by byte.
struct FlakySink(Arc<[AtomicU64; 8]>);

impl Actor for FlakySink {
    type Msg = Flaky;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Flaky) -> HandleResult {
        self.0[msg.0 as usize % 8].fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A probe on `n`, and a ref to it that can travel to another node.
fn probe(n: &Node) -> (TestProbe<i64>, ActorRef<i64>) {
    let probe = TestProbe::<i64>::new(&n.system);
    let to = probe.actor_ref();
    let fwd = n
        .system
        .spawn_anonymous(Props::new(move || Forward(to.clone())))
        .unwrap();
    (probe, fwd)
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<Echo>(300).unwrap();
    r.register::<i64>(301).unwrap();
    r.register::<ActorRef<Echo>>(302).unwrap();
    r.register::<ActorRef<i64>>(303).unwrap();
    r.register_with::<Flaky, FlakySerializer>(304).unwrap();
    r
}

async fn node(name: &str, remote: RemoteSettings) -> Node {
    let system = ActorSystem::with_settings(name, node_settings()).unwrap();
    let remoting = Remoting::start_with(&system, registry(), remote)
        .await
        .unwrap();
    Node { system, remoting }
}

async fn pair() -> (Node, Node) {
    (
        node("alpha", RemoteSettings::default()).await,
        node("beta", RemoteSettings::default()).await,
    )
}

fn spawn_echo(n: &Node, name: &str) -> ActorRef<Echo> {
    n.system.spawn(name, Props::new(|| EchoActor)).unwrap()
}

fn path(n: &Node, name: &str) -> String {
    format!("{}/user/{name}", n.remoting.address())
}

/// `from`'s ref to `/user/{name}` on `to` by path (no uid: a selection).
fn select(from: &Node, to: &Node, name: &str) -> ActorRef<Echo> {
    from.remoting.resolve::<Echo>(&path(to, name)).unwrap()
}

/// `from`'s ref to `/user/{name}` on `to` as the actor itself sent it, so
/// with its uid (Pekko's `Identify`).
async fn identify(from: &Node, to: &Node, name: &str) -> ActorRef<Echo> {
    select(from, to, name).ask(Echo::Me, T).await.unwrap()
}

/// Fails if either node saw its association disassociate or quarantine.
fn assert_no_trouble(events: &TestProbe<RemotingEvent>) {
    for e in events_so_far(events) {
        assert!(
            !matches!(
                e,
                RemotingEvent::Disassociated { .. } | RemotingEvent::Quarantined { .. }
            ),
            "the association suffered: {e:?}"
        );
    }
}

async fn stop(a: Node, b: Node) {
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_actor_answers_through_its_own_ref_and_through_its_path() {
    let (a, b) = pair().await;
    spawn_echo(&b, "echo");
    let (probe, reply) = probe(&a);
    let by_ref = identify(&a, &b, "echo").await;
    assert_eq!(by_ref.path().to_string(), path(&b, "echo"));
    let by_path = select(&a, &b, "echo");
    for n in 1..=3 {
        by_ref.tell(Echo::Num(n, reply.clone()));
        probe.expect_msg(n);
    }
    for n in 4..=5 {
        by_path.tell(Echo::Num(n, reply.clone()));
        probe.expect_msg(n);
    }
    stop(a, b).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_to_a_stopped_actor_does_not_reach_a_new_actor_of_the_same_name() {
    let (a, b) = pair().await;
    let first = spawn_echo(&b, "otherEcho1");
    let (probe, reply) = probe(&a);
    // The echo sends its own ref (with its uid) to a collector on alpha.
    // A selection used on both sides of the restart: resolve_rebinding.rs.
    let refs = TestProbe::<ActorRef<Echo>>::new(&a.system);
    let to = refs.actor_ref();
    a.system
        .spawn("collector", Props::new(move || Forward(to.clone())))
        .unwrap();
    let collector = b
        .remoting
        .resolve::<ActorRef<Echo>>(&path(&a, "collector"))
        .unwrap();
    first.tell(Echo::Me(collector));
    let old = refs.receive_msg();
    assert_eq!(old.path().to_string(), path(&b, "otherEcho1"));
    old.tell(Echo::Num(71, reply.clone()));
    probe.expect_msg(71);

    b.system.stop(&first);
    let mut second = None;
    eventually("the name to be free again", || {
        second = b.system.spawn("otherEcho1", Props::new(|| EchoActor)).ok();
        second.is_some()
    })
    .await;
    // By path, the new actor is reached: a selection matches any incarnation.
    let new = select(&a, &b, "otherEcho1");
    new.tell(Echo::Num(73, reply.clone()));
    probe.expect_msg(73);

    // By the old uid, not: the receiver drops it as a counted dead letter.
    let before = b.system.dead_letter_count();
    old.tell(Echo::Num(74, reply.clone()));
    eventually("the old incarnation's message to be a dead letter", || {
        b.system.dead_letter_count() > before
    })
    .await;
    // Had 74 been delivered, its answer would come before this one.
    new.tell(Echo::Num(75, reply.clone()));
    probe.expect_msg(75);
    stop(a, b).await;
}

/// Pekko's sender of the concurrency case: counts down from 1000 through a
/// remote echo, one message in flight at a time, and reports whether every
/// answer was the one it expected.
struct Countdown {
    to: ActorRef<Echo>,
    counter: i64,
    report: ActorRef<String>,
}

impl Actor for Countdown {
    type Msg = i64;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.to.tell(Echo::Num(self.counter, ctx.myself()));
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, n: i64) -> HandleResult {
        if n != self.counter {
            self.report
                .tell(format!("expected {} got {n}", self.counter));
            ctx.stop_self();
        } else if n == 0 {
            self.report.tell("success".into());
            ctx.stop_self();
        } else {
            self.counter -= 1;
            self.to.tell(Echo::Num(self.counter, ctx.myself()));
        }
        Ok(())
    }
}

async fn countdowns_preserve_order(with_uid: bool) {
    let (a, b) = pair().await;
    let names = ["echoA", "echoB", "echoC"];
    let mut targets = Vec::new();
    for name in names {
        spawn_echo(&b, name);
        targets.push(if with_uid {
            identify(&a, &b, name).await
        } else {
            select(&a, &b, name)
        });
    }
    // Two senders share echoA, as in Pekko's case.
    targets.push(targets[0].clone());
    let report = TestProbe::<String>::new(&a.system);
    for to in targets {
        let report = report.actor_ref();
        a.system
            .spawn_anonymous(Props::new(move || Countdown {
                to: to.clone(),
                counter: 1000,
                report: report.clone(),
            }))
            .unwrap();
    }
    let reports = report.receive_n_within(Duration::from_secs(30), 4);
    assert!(reports.iter().all(|r| r == "success"), "{reports:?}");
    stop(a, b).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_request_response_through_refs_with_a_uid_keeps_order() {
    countdowns_preserve_order(true).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_request_response_through_resolved_paths_keeps_order() {
    countdowns_preserve_order(false).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_under_the_frame_limit_arrives_and_one_over_it_is_dropped_at_the_sender() {
    const LIMIT: u32 = 1024 * 1024;
    let limited = || RemoteSettings {
        max_frame_size: LIMIT,
        ..RemoteSettings::default()
    };
    let a = node("alpha", limited()).await;
    let b = node("beta", limited()).await;
    spawn_echo(&b, "bounce");
    let echo = select(&a, &b, "bounce");
    let events = record_events(&a);
    let dropped = TestProbe::<DeadLetter>::on_event_stream(&a.system);
    let (probe, reply) = probe(&a);

    // Room for the frame's header and the reply ref's declaration.
    let fits = LIMIT as usize - 500;
    echo.tell(Echo::Blob(vec![42; fits], reply.clone()));
    probe.expect_msg(fits as i64);

    let before = a.system.dead_letter_count();
    echo.tell(Echo::Blob(vec![42; LIMIT as usize + 1], reply.clone()));
    assert_eq!(a.system.dead_letter_count(), before + 1);
    let letter = dropped.receive_msg();
    assert_eq!(letter.recipient, path(&b, "bounce"));
    assert!(letter.message_type.contains("Echo"), "{letter:?}");
    // Nothing came back for it, and the association carries on.
    echo.tell(Echo::Num(7, reply.clone()));
    probe.expect_msg(7);
    assert_eq!(b.system.dead_letter_count(), 0);
    assert_no_trouble(&events);
    stop(a, b).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_ref_sent_away_and_echoed_back_is_the_local_actor_again() {
    let (a, b) = pair().await;
    spawn_echo(&b, "echo");
    let echo = select(&a, &b, "echo");
    let (probe, reply) = probe(&a);
    let mine = reply.clone();
    let back = echo
        .ask(|reply_to| Echo::Bounce(mine.clone(), reply_to), T)
        .await
        .unwrap();
    assert_eq!(back, mine);
    assert_eq!(back.path(), mine.path());
    // The very local actor, not a remote proxy that loops through beta.
    assert_eq!(back.target_key(), mine.target_key());
    back.tell(5);
    probe.expect_msg(5);
    stop(a, b).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializer_errors_and_panics_lose_only_their_message_on_either_side() {
    let (a, b) = pair().await;
    let seen: Arc<[AtomicU64; 8]> = Arc::new(Default::default());
    b.system
        .spawn(
            "flaky",
            Props::new({
                let seen = seen.clone();
                move || FlakySink(seen.clone())
            }),
        )
        .unwrap();
    let flaky = a.remoting.resolve::<Flaky>(&path(&b, "flaky")).unwrap();
    let a_events = record_events(&a);
    let b_events = record_events(&b);
    flaky.tell(Flaky(0));
    eventually("the first good message", || {
        seen[0].load(Ordering::SeqCst) == 1
    })
    .await;

    let (a_before, b_before) = (a.system.dead_letter_count(), b.system.dead_letter_count());
    // Encoding fails at the sender: an error, then a panic.
    flaky.tell(Flaky(1));
    flaky.tell(Flaky(2));
    assert_eq!(a.system.dead_letter_count(), a_before + 2);
    // Decoding fails at the receiver: an error, then a panic.
    flaky.tell(Flaky(3));
    flaky.tell(Flaky(4));
    flaky.tell(Flaky(5));
    eventually("the good message after the bad ones", || {
        seen[5].load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(b.system.dead_letter_count(), b_before + 2);
    for bad in 1..=4 {
        assert_eq!(seen[bad].load(Ordering::SeqCst), 0, "Flaky({bad}) arrived");
    }
    // The connection survived: more messages, through the same run of
    // frames, still arrive.
    flaky.tell(Flaky(0));
    eventually("another good message", || {
        seen[0].load(Ordering::SeqCst) == 2
    })
    .await;
    assert_no_trouble(&a_events);
    assert_no_trouble(&b_events);
    stop(a, b).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_messages_get_through_while_a_large_one_is_on_its_way() {
    let (a, b) = pair().await;
    spawn_echo(&b, "large");
    spawn_echo(&b, "regular");
    let large = select(&a, &b, "large");
    let regular = select(&a, &b, "regular");
    let (small, small_reply) = probe(&a);
    let (big, big_reply) = probe(&a);
    const LARGE: usize = 4 * 1024 * 1024;
    large.tell(Echo::Blob(vec![0; LARGE], big_reply));
    for n in 1..=3 {
        regular.tell(Echo::Num(n, small_reply.clone()));
    }
    assert_eq!(small.receive_n(3), vec![1, 2, 3]);
    big.expect_msg_within(T, LARGE as i64);
    assert_eq!(a.system.dead_letter_count(), 0);
    assert_eq!(b.system.dead_letter_count(), 0);
    stop(a, b).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_at_this_nodes_address_resolves_to_the_local_actor() {
    let (a, b) = pair().await;
    let here = spawn_echo(&a, "echo");
    spawn_echo(&b, "echo");
    let local = select(&a, &a, "echo");
    assert_eq!(local, here);
    assert_eq!(local.target_key(), here.target_key(), "not the local actor");
    let (probe, reply) = probe(&a);
    local.tell(Echo::Num(1, reply.clone()));
    probe.expect_msg(1);

    // A remote path gives a remote ref, the same one however often asked.
    let remote = select(&a, &b, "echo");
    assert_ne!(remote.target_key(), here.target_key());
    assert_eq!(remote, select(&a, &b, "echo"));
    assert_eq!(remote.path().to_string(), path(&b, "echo"));
    remote.tell(Echo::Num(2, reply.clone()));
    probe.expect_msg(2);
    stop(a, b).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_with_another_scheme_is_refused() {
    let (a, b) = pair().await;
    let volley = path(&b, "echo");
    let other = volley.replacen("volley://", "pekko.tcp://", 1);
    assert!(a.remoting.resolve::<Echo>(&other).is_err(), "{other}");
    let no_scheme = volley.replacen("volley://", "", 1);
    assert!(a.remoting.resolve::<Echo>(&no_scheme).is_err());
    stop(a, b).await;
}
