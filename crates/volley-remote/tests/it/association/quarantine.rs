//! Quarantine: an incarnation the failure detector gave up is refused for
//! good, with `Quarantined` in the handshake answer, while a new
//! incarnation at the same address (a restart) associates at once.

use crate::common;
use crate::log_capture;
use crate::raw_peer;

use std::time::Duration;

use bytes::BytesMut;
use common::holding_relay::behind_holding_relay;
use common::{node, Calc, T};
use raw_peer::hostile;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use volley::{ActorRef, Props};
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Disassociate, DisassociateReason, Encoder, HandshakeRequest,
    HandshakeStatus, Lane, Pdu, Preamble, PROTOCOL_VERSION,
};
use volley_remote::{RemoteSettings, RemotingEvent};
use volley_testkit::TestProbe;

/// Opens a `lane` connection to `to` as incarnation `uid` of node `from`;
/// returns it with the handshake's answer.
async fn handshake_as(
    to: &Address,
    from: &Address,
    uid: u64,
    lane: Lane,
) -> (TcpStream, HandshakeStatus) {
    let mut s = TcpStream::connect((to.host(), to.port())).await.unwrap();
    let mut out = BytesMut::new();
    Preamble::new(lane).encode(&mut out);
    Encoder::for_lane(Lane::Control)
        .encode(
            &Pdu::HandshakeRequest(Box::new(HandshakeRequest {
                version: PROTOCOL_VERSION,
                from: from.clone(),
                uid,
                to: to.clone(),
                auth: None,
            })),
            &mut out,
        )
        .unwrap();
    s.write_all(&out).await.unwrap();
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let mut buf = BytesMut::new();
    loop {
        if let Some((Pdu::HandshakeResponse(r), _)) = decoder.decode_frame(&buf).unwrap() {
            let status = r.status;
            return (s, status);
        }
        let read = tokio::time::timeout(T, s.read_buf(&mut buf)).await.unwrap();
        assert!(read.unwrap() > 0, "closed before answering the handshake");
    }
}

/// Node `name` with `settings`, which knows a node that only dials in
/// (nobody listens for it), and the control connection of that node's
/// incarnation 1111, handshaken. Returns the node, with that node's
/// address, the event recorder and the connection.
async fn a_dialer(
    name: &str,
    mut settings: RemoteSettings,
) -> (common::Node, Address, TestProbe<RemotingEvent>, TcpStream) {
    // A known peer: an unknown one whose address does not answer is never
    // associated, so there would be nothing to quarantine.
    let port = common::free_port();
    let fake: Address = format!("volley://fake@127.0.0.1:{port}").parse().unwrap();
    settings.failure_detector = FailureDetectorSettings {
        heartbeat_interval: Duration::from_millis(50),
        acceptable_heartbeat_pause: Duration::from_millis(300),
        ..FailureDetectorSettings::default()
    };
    settings.trust.known_peers = vec![fake.to_string()];
    let a = node(name, settings).await;
    let events = common::record_events(&a);
    let to = a.remoting.address().clone();
    let (control, status) = handshake_as(&to, &fake, 1111, Lane::Control).await;
    assert_eq!(status, HandshakeStatus::Accepted);
    (a, fake, events, control)
}

/// A few heartbeats on `control`, then silence, until the node gives
/// incarnation 1111 of `fake` up and quarantines it.
async fn beat_then_fall_silent(
    a: &common::Node,
    fake: &Address,
    events: &TestProbe<RemotingEvent>,
    control: &mut TcpStream,
) {
    let mut beat = BytesMut::new();
    Encoder::heartbeat(&mut beat);
    for _ in 0..10 {
        control.write_all(&beat).await.unwrap();
        // Heartbeats at the detector's interval: a live peer, simulated.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.remoting.is_reachable(fake), Some(true));
    // Silence: the detector gives incarnation 1111 up and quarantines it.
    events.fish_for(|e| matches!(e, RemotingEvent::Quarantined { uid: 1111, .. }));
    assert_eq!(a.remoting.is_reachable(fake), Some(false));
}

/// [`a_dialer`], quarantined.
async fn quarantine_a_dialer(
    name: &str,
    settings: RemoteSettings,
) -> (common::Node, Address, TestProbe<RemotingEvent>) {
    let (a, fake, events, mut control) = a_dialer(name, settings).await;
    beat_then_fall_silent(&a, &fake, &events, &mut control).await;
    (a, fake, events)
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_up_incarnation_is_refused_and_a_new_one_is_welcome() {
    let (a, fake, events) = quarantine_a_dialer("q-a", RemoteSettings::default()).await;
    let to = a.remoting.address().clone();
    // The same incarnation, back from its pause: refused, on every lane.
    for lane in Lane::ALL {
        let (_s, status) = handshake_as(&to, &fake, 1111, lane).await;
        assert_eq!(status, HandshakeStatus::Quarantined, "{lane:?}");
    }
    // A restart of that node: associated at once, nothing to restart here.
    let (_s, status) = handshake_as(&to, &fake, 2222, Lane::Control).await;
    assert_eq!(status, HandshakeStatus::Accepted);
    events.fish_for(|e| matches!(e, RemotingEvent::Associated { uid: 2222, .. }));
    let (_s, status) = handshake_as(&to, &fake, 1111, Lane::Ordinary).await;
    assert_eq!(
        status,
        HandshakeStatus::Quarantined,
        "still refused for good"
    );
    a.system.terminate().await;
}

/// Akka Artery's `remove-quarantined-association-after`: a stopped
/// association that remembers a quarantined incarnation is kept, so the
/// incarnation stays refused, for that long; then it is removed like any
/// stopped association, and what it knew goes with it: the incarnation,
/// back after all that time, is associated with again (Artery documents
/// the same). With the setting at 0 it is kept for ever.
// One dispatcher kind: what this checks is the transport's timing (its
// connection attempts and timers), which no actor's scheduling touches,
// and it waits seconds of real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantined_association_is_removed_after_its_time_unless_kept_for_ever() {
    for keep_ms in [400, 0] {
        let settings = RemoteSettings {
            stop_idle_outbound_after: Duration::from_millis(200),
            remove_quarantined_association_after: Duration::from_millis(keep_ms),
            ..RemoteSettings::default()
        };
        log_capture::install();
        let (a, fake, _events) = quarantine_a_dialer("q-removed", settings).await;
        let to = a.remoting.address().clone();
        // Stopped for idleness, held for `keep_ms`: refused meanwhile.
        let stopped = format!("remote={fake}");
        volley_testkit::await_cond("the association stopped for idleness", || {
            !log_capture::events(|e| {
                e.text.starts_with("association stopped: idle") && e.text.contains(&stopped)
            })
            .is_empty()
        });
        let (_s, status) = handshake_as(&to, &fake, 1111, Lane::Ordinary).await;
        assert_eq!(status, HandshakeStatus::Quarantined, "keep {keep_ms} ms");
        drop(_s);
        if keep_ms == 0 {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            assert!(
                a.remoting.association_state(&fake).is_some(),
                "kept for ever"
            );
            let (_s, status) = handshake_as(&to, &fake, 1111, Lane::Ordinary).await;
            assert_eq!(status, HandshakeStatus::Quarantined, "still refused");
        } else {
            common::eventually("the quarantined association removed", || {
                a.remoting.association_state(&fake).is_none()
            })
            .await;
            let (_s, status) = handshake_as(&to, &fake, 1111, Lane::Control).await;
            assert_eq!(status, HandshakeStatus::Accepted, "forgotten");
        }
        a.system.terminate().await;
    }
}

/// Issue 29 (6): a quarantine ends the incarnation's inbound connections
/// at once. A connection blocked in its read used to stay open until the
/// peer's next bytes, and deliver them.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_closes_the_incarnations_connections_at_once() {
    let (a, fake, events, mut control) = a_dialer("q-closes", RemoteSettings::default()).await;
    let to = a.remoting.address().clone();
    let (mut ordinary, status) = handshake_as(&to, &fake, 1111, Lane::Ordinary).await;
    assert_eq!(status, HandshakeStatus::Accepted);
    beat_then_fall_silent(&a, &fake, &events, &mut control).await;
    // Nothing was written on either since: the node closed them by itself
    // (its idle timeout is a minute away).
    assert!(
        raw_peer::closed_within(&mut ordinary, T).await,
        "ordinary lane"
    );
    assert!(
        raw_peer::closed_within(&mut control, T).await,
        "control lane"
    );
    a.system.terminate().await;
}

/// Issue 29 (6) and (2): what follows the peer's own
/// `Disassociate(Quarantined)` in one read is not delivered: each message
/// is a dead letter, and the connection closes.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_behind_a_quarantine_are_dead_letters_not_deliveries() {
    let (a, fake, events, _control) = a_dialer("q-behind", RemoteSettings::default()).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.system
        .spawn("sink", Props::new(move || common::Relay(tx.clone())))
        .unwrap();
    let to = a.remoting.address().clone();
    let (mut ordinary, status) = handshake_as(&to, &fake, 1111, Lane::Ordinary).await;
    assert_eq!(status, HandshakeStatus::Accepted);
    let sink = format!("{to}/user/sink");
    let mut first = hostile::declarations(&[&sink]);
    first.extend_from_slice(&hostile::sum_frame(1, 0));
    ordinary.write_all(&first).await.unwrap();
    let delivered = tokio::time::timeout(T, rx.recv()).await.unwrap();
    assert_eq!(delivered, Some(0), "the way in works");

    let before = a.system.dead_letter_count();
    let mut last = hostile::frames(
        Lane::Ordinary,
        &[Pdu::Disassociate(Disassociate {
            reason: DisassociateReason::Quarantined,
            text: "you are quarantined",
        })],
    );
    for n in 1..=5 {
        last.extend_from_slice(&hostile::sum_frame(1, n));
    }
    ordinary.write_all(&last).await.unwrap();
    events.fish_for(|e| matches!(e, RemotingEvent::Quarantined { uid: 1111, .. }));
    hostile::wait_for("five dead letters", || {
        a.system.dead_letter_count() >= before + 5
    })
    .await;
    assert!(raw_peer::closed_within(&mut ordinary, T).await);
    // Time passing is the point: nothing arrives late either.
    let late = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await;
    assert!(late.is_err(), "delivered after the verdict: {late:?}");
    assert_eq!(a.system.dead_letter_count(), before + 5);
    a.system.terminate().await;
}

/// Which bytes a partition holds back, between the judge A and its peer B.
#[derive(Debug, Clone, Copy)]
enum Partition {
    /// Every byte, both ways.
    Both,
    /// B's bytes to A only: A stops hearing B, B still hears A.
    PeerToJudge,
}

/// What A's counter has received from B.
async fn received(counter: &ActorRef<Calc>) -> u64 {
    let report = counter
        .ask(Calc::Report, T)
        .await
        .expect("the counter answers");
    report[0]
}

/// Issue 29 (6): B streams tells to A through relays; a partition longer
/// than A's acceptable pause gets B quarantined by A; then it heals, and
/// the relays let go of what B sent meanwhile. None of it reaches A's
/// actor: A ended B's connections at its verdict, while they were waiting.
async fn nothing_arrives_after_a_partition_verdict(partition: Partition) {
    let (a, relay_a) = behind_holding_relay("q-judge", common::quick_detector()).await;
    let (b, relay_b) = behind_holding_relay("q-peer", common::quick_detector()).await;
    let counter = common::spawn_calculator(&a, "counter");
    let a_events = common::record_events(&a);
    let b_events = common::record_events(&b);
    let to_counter = common::remote_ref(&b, &a, "counter");
    let streaming = tokio::spawn(async move {
        for n in 0.. {
            to_counter.tell(Calc::Seq { from: 0, n });
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    common::eventually("B's tells reaching A, and B heard", || {
        a.remoting.is_reachable(b.remoting.address()) == Some(true)
    })
    .await;
    let deadline = std::time::Instant::now() + T;
    while received(&counter).await == 0 {
        assert!(std::time::Instant::now() < deadline, "B's tells reach A");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    match partition {
        Partition::Both => {
            relay_a.hold(true, true);
            relay_b.hold(true, true);
        }
        Partition::PeerToJudge => relay_a.hold(true, false),
    }
    let b_uid = b.remoting.uid();
    a_events.fish_for_within(
        T,
        |e| matches!(e, RemotingEvent::Quarantined { uid, .. } if *uid == b_uid),
    );
    // Nothing of B can have come through since the partition began: this
    // is all A's actor will ever get from this incarnation of B.
    let at_verdict = received(&counter).await;
    relay_a.heal();
    relay_b.heal();
    // B learns of it (A's next handshake tells it), and stops sending.
    let a_uid = a.remoting.uid();
    b_events.fish_for_within(
        T,
        |e| matches!(e, RemotingEvent::Quarantined { uid, .. } if *uid == a_uid),
    );
    // Time passing is the point: what the relays held has had its chance.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        received(&counter).await,
        at_verdict,
        "{partition:?}: messages of a quarantined incarnation were delivered"
    );
    streaming.abort();
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_arrives_after_a_verdict_on_a_partition_both_ways() {
    nothing_arrives_after_a_partition_verdict(Partition::Both).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_arrives_after_a_verdict_on_a_partition_one_way() {
    nothing_arrives_after_a_partition_verdict(Partition::PeerToJudge).await;
}
