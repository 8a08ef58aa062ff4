//! Cases of Apache Pekko's `artery.SystemMessageDeliverySpec` that the
//! other suites left out because Pekko drives them through its stream
//! stages; here a hand-driven peer (`raw_peer`) plays node B on the wire,
//! acknowledging, losing and replaying what volley's node A sends it
//! (wire-protocol.md §5.9, §5.10, §13 "System messages"):
//!
//! - "be resent when last is lost": A watches three actors of B; B takes
//!   all three Watches but acknowledges only two before the connection
//!   breaks; on the next connection A sends the third again, and not the
//!   two acknowledged:
//!   `an_unacknowledged_last_system_message_is_resent_alone`.
//! - "be ignored when ACK is from stale remote incarnation": B restarts (a
//!   new uid) while a connection of its old incarnation is still open; an
//!   ack arriving there does not acknowledge what A sent the new
//!   incarnation, which A sends again on the next connection:
//!   `an_ack_from_a_stale_incarnation_acknowledges_nothing`. (A bug fixed
//!   in `liveness/incarnations.rs`: on a restart A kept its own connections to the
//!   old incarnation and wrote the new one's Watch, numbered 1, there,
//!   where the old incarnation would take it for a duplicate; they are
//!   now dropped and every lane dials the new incarnation.)
//!
//! The other cases of the spec, and why, are listed in `pekko_artery.rs`
//! and `pekko_artery_more.rs`.

use crate::common;
use crate::raw_peer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use common::{node, Calc, Node, T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use volley::ActorRef;
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Encoder, Lane, Pdu, SystemAck, PROTOCOL_VERSION,
};
use volley_remote::RemoteSettings;
use volley_testkit::TestProbe;

/// Watch's `type_id` (wire-protocol.md §5.9).
const WATCH: u32 = 1;

/// Node B, played by hand: takes every connection of A, answering as the
/// incarnation `uid` holds at the time, and hands the control lane's
/// connections to the test.
struct FakeB {
    address: Address,
    uid: Arc<AtomicU64>,
    control: UnboundedReceiver<(TcpStream, BytesMut)>,
}

async fn fake_b() -> FakeB {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let address: Address = format!("volley://fake-b@127.0.0.1:{port}").parse().unwrap();
    let uid = Arc::new(AtomicU64::new(11));
    let (tx, control) = unbounded_channel();
    let (me, current) = (address.clone(), uid.clone());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (me, current, tx) = (me.clone(), current.clone(), tx.clone());
            tokio::spawn(async move {
                let uid = current.load(Ordering::SeqCst);
                let (lane, rest) = raw_peer::answer_handshake_as(&mut s, &me, uid).await;
                if lane == Lane::Control {
                    let _ = tx.send((s, rest));
                } else {
                    // Other lanes stay open, unread.
                    std::mem::forget(s);
                }
            });
        }
    });
    FakeB {
        address,
        uid,
        control,
    }
}

impl FakeB {
    /// A's next control connection to B.
    async fn next_control(&mut self) -> (TcpStream, BytesMut) {
        match tokio::time::timeout(T, self.control.recv()).await {
            Ok(Some(c)) => c,
            _ => panic!("A did not dial B's control lane"),
        }
    }

    /// A control connection from B's incarnation `uid` to A.
    async fn dial(&self, a: &Node, uid: u64) -> TcpStream {
        let to = a.remoting.address();
        raw_peer::handshaken_as(to, &self.address, uid, Lane::Control).await
    }
}

/// The next frame A writes on `s` that `pick` picks (skipping the others),
/// as `pick` maps it; `what` names it in the failure.
async fn next_picked<R>(
    s: &mut TcpStream,
    buf: &mut BytesMut,
    what: &str,
    pick: impl Fn(Pdu<'_>) -> Option<R>,
) -> R {
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    loop {
        while let Some((pdu, used)) = decoder.decode_frame(buf).unwrap() {
            let found = pick(pdu);
            let _ = buf.split_to(used);
            if let Some(found) = found {
                return found;
            }
        }
        let read = tokio::time::timeout(T, s.read_buf(buf)).await;
        match read {
            Ok(Ok(n)) if n > 0 => {}
            other => panic!("no {what} from A: {other:?}"),
        }
    }
}

/// The next SystemMessage A writes on `s`: its `seq` and `type_id`.
async fn next_system_message(s: &mut TcpStream, buf: &mut BytesMut) -> (u64, u32) {
    next_picked(s, buf, "system message", |pdu| match pdu {
        Pdu::SystemMessage(m) => Some((m.seq, m.header.type_id)),
        _ => None,
    })
    .await
}

/// Reads the Watches A writes on `s` until the one numbered `last`. What
/// was queued before a connection came up is written twice on it, once
/// resent at its start and once from the queue (§5.10: the receiver drops
/// duplicates), so a number may come again; a gap never.
async fn watches_up_to(s: &mut TcpStream, buf: &mut BytesMut, last: u64) {
    let mut highest = 0;
    while highest < last {
        let (seq, kind) = next_system_message(s, buf).await;
        assert_eq!(kind, WATCH);
        assert!(seq <= highest + 1, "Watch {seq} after {highest}: a gap");
        highest = highest.max(seq);
    }
}

/// Sends a heartbeat on B's connection `from_b` and waits for A's answer
/// on its own control connection `to_b`. A handles a connection's frames
/// in order, so everything B sent on `from_b` before has been handled by
/// then.
async fn handled_so_far(from_b: &mut TcpStream, to_b: &mut TcpStream, to_b_buf: &mut BytesMut) {
    let mut beat = BytesMut::new();
    Encoder::heartbeat(&mut beat);
    from_b.write_all(&beat).await.unwrap();
    next_picked(to_b, to_b_buf, "heartbeat ack", |pdu| {
        matches!(pdu, Pdu::HeartbeatAck).then_some(())
    })
    .await
}

async fn send_ack(s: &mut TcpStream, ack: u64) {
    let mut out = BytesMut::new();
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::SystemAck(SystemAck { ack }), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
}

/// Reconnects within 50 to 200 ms; a detector that does not give B up
/// for its silence (the fake sends no heartbeats) while the test runs.
fn settings() -> RemoteSettings {
    RemoteSettings {
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        failure_detector: FailureDetectorSettings {
            acceptable_heartbeat_pause: Duration::from_millis(120_000),
            ..FailureDetectorSettings::default()
        },
        ..RemoteSettings::default()
    }
}

fn target(a: &Node, b: &FakeB, name: &str) -> ActorRef<Calc> {
    a.remoting
        .resolve::<Calc>(&format!("{}/user/{name}", b.address))
        .unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unacknowledged_last_system_message_is_resent_alone() {
    assert_eq!(PROTOCOL_VERSION, 1, "the frames below are version 1's");
    let mut b = fake_b().await;
    let a = node("resend-a", settings()).await;
    let probe = TestProbe::<u32>::new(&a.system);
    for name in ["t1", "t2", "t3"] {
        probe.watch(&target(&a, &b, name));
    }
    let (mut first, mut buf) = b.next_control().await;
    watches_up_to(&mut first, &mut buf, 3).await;
    // B acknowledges two of them, on its own connection to A.
    let mut from_b = b.dial(&a, 11).await;
    send_ack(&mut from_b, 2).await;
    handled_so_far(&mut from_b, &mut first, &mut buf).await;
    // The connection A wrote the third on breaks.
    drop(first);
    let (mut second, mut buf) = b.next_control().await;
    assert_eq!(
        next_system_message(&mut second, &mut buf).await,
        (3, WATCH),
        "the unacknowledged Watch first, and the acknowledged ones not again"
    );
    // A new watch continues the numbering.
    probe.watch(&target(&a, &b, "t4"));
    assert_eq!(next_system_message(&mut second, &mut buf).await, (4, WATCH));
    a.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_from_a_stale_incarnation_acknowledges_nothing() {
    let mut b = fake_b().await;
    let a = node("stale-ack-a", settings()).await;
    let probe = TestProbe::<u32>::new(&a.system);
    let old_target = target(&a, &b, "t1");
    probe.watch(&old_target);
    let (mut to_old, mut buf) = b.next_control().await;
    assert_eq!(next_system_message(&mut to_old, &mut buf).await, (1, WATCH));
    let mut from_old = b.dial(&a, 11).await;

    // B restarts: its new incarnation dials A; the old one's connection
    // stays open. A ends the watch of the old incarnation.
    b.uid.store(22, Ordering::SeqCst);
    let _from_new = b.dial(&a, 22).await;
    probe.expect_terminated_within(T, &old_target);

    // A watches an actor of the new incarnation: Watch number 1 again, on
    // a new connection (it used to go on the one to the old incarnation,
    // and A never dialed again).
    probe.watch(&target(&a, &b, "t2"));
    let mut to_new = loop {
        let (mut s, mut buf) = b.next_control().await;
        let peek = tokio::time::timeout(
            Duration::from_millis(500),
            next_system_message(&mut s, &mut buf),
        )
        .await;
        match peek {
            Ok(found) => {
                assert_eq!(found, (1, WATCH), "the new incarnation's numbering");
                break s;
            }
            // A connection A made before it knew of the restart.
            Err(_) => continue,
        }
    };
    drop(to_old);

    // The old incarnation acknowledges number 1: about its own Watch,
    // long forgotten. A closes that connection once it reads it.
    send_ack(&mut from_old, 1).await;
    assert!(
        raw_peer::closed_within(&mut from_old, T).await,
        "A kept reading a gone incarnation's connection"
    );
    // The new incarnation never acknowledged its Watch: on the next
    // connection A sends it again.
    let _ = to_new.shutdown().await;
    drop(to_new);
    let (mut again, mut buf) = b.next_control().await;
    assert_eq!(
        next_system_message(&mut again, &mut buf).await,
        (1, WATCH),
        "the stale ack was taken for the new incarnation's"
    );
    a.system.terminate().await;
}
