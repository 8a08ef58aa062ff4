//! Idle associations (`stop_idle_outbound_after`): one that carried
//! nothing but heartbeats for the configured time says so, closes its
//! connections and stops; the next message starts it again; a remote
//! watch keeps it; and two nodes that stop and start again never take
//! each other's quiet for a crash.

use crate::common;
use crate::raw_peer;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{
    add, events_so_far, node, record_events, remote_ref, spawn_calculator, Calc, Node, T,
};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use volley::ActorRef;
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, DisassociateReason, Lane, Pdu, PduKind,
};
use volley_remote::{AssociationState, DisassociationReason, RemoteSettings, RemotingEvent};

const IDLE_MS: u64 = 600;

/// Heartbeats every 50 ms, a detector that gives a node up after about a
/// second of silence (long enough that a loaded machine's scheduling gaps
/// are not taken for one), and associations stopped after 600 ms of
/// idleness: a node that went quiet without its peer's knowing would be
/// declared unreachable well within each test.
fn idling() -> RemoteSettings {
    RemoteSettings {
        failure_detector: FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(50),
            acceptable_heartbeat_pause: Duration::from_millis(1000),
            ..FailureDetectorSettings::default()
        },
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        stop_idle_outbound_after: Duration::from_millis(IDLE_MS),
        ..RemoteSettings::default()
    }
}

fn state(of: &Node, towards: &Node) -> Option<AssociationState> {
    of.remoting.association_state(towards.remoting.address())
}

async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Seen by a hand-driven peer on one connection: the kinds of the frames
/// but heartbeats that came before the connection closed (with a
/// Disassociate's reason); `None` if it stayed open.
async fn frames_until_closed(
    mut stream: tokio::net::TcpStream,
    mut buf: bytes::BytesMut,
    within: Duration,
) -> Option<Vec<(PduKind, Option<DisassociateReason>)>> {
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        while let Some((pdu, used)) = decoder.decode_frame(&buf).ok()? {
            match pdu {
                Pdu::Heartbeat => {}
                Pdu::Disassociate(d) => seen.push((PduKind::Disassociate, Some(d.reason))),
                other => seen.push((other.kind(), None)),
            }
            let _ = buf.split_to(used);
        }
        match tokio::time::timeout_at(deadline, stream.read_buf(&mut buf)).await {
            Ok(Ok(0)) => return Some(seen),
            Ok(Ok(_)) => {}
            Ok(Err(_)) | Err(_) => return None,
        }
    }
}

/// On the wire: after the idle time, the association's control connection
/// carries a Disassociate(Idle), then all three connections close; the
/// association is Idle, and the next message dials again and arrives.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_association_says_so_and_closes_its_connections() {
    let a = node(
        "alpha",
        RemoteSettings {
            // The hand-driven peer sends no heartbeats: not judged here.
            failure_detector: FailureDetectorSettings {
                heartbeat_interval: Duration::from_millis(50),
                acceptable_heartbeat_pause: Duration::from_millis(60_000),
                ..FailureDetectorSettings::default()
            },
            ..idling()
        },
    )
    .await;
    let events = record_events(&a);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake: Address = format!("volley://fake@127.0.0.1:{port}").parse().unwrap();
    let x = a
        .remoting
        .resolve::<Calc>(&format!("{fake}/user/x"))
        .unwrap();
    x.tell(Calc::Seq { from: 0, n: 0 });
    let started = Instant::now();
    let mut closed = Vec::new();
    for _ in 0..3 {
        let (lane, stream, buf) = tokio::time::timeout(T, raw_peer::accept_as(&listener, &fake))
            .await
            .expect("the association connects its three lanes");
        closed.push(tokio::spawn(async move {
            (lane, frames_until_closed(stream, buf, T).await)
        }));
    }
    let mut control_frames = None;
    for c in closed {
        let (lane, frames) = c.await.unwrap();
        let frames = frames.unwrap_or_else(|| panic!("the {lane:?} connection stayed open"));
        if lane == Lane::Control {
            control_frames = Some(frames);
        }
    }
    assert!(
        started.elapsed() >= Duration::from_millis(IDLE_MS),
        "closed after {:?}, before the idle time",
        started.elapsed()
    );
    let control = control_frames.expect("a control connection");
    assert_eq!(
        control.last(),
        Some(&(PduKind::Disassociate, Some(DisassociateReason::Idle))),
        "the control lane's frames: {control:?}"
    );
    assert_eq!(
        a.remoting.association_state(&fake),
        Some(AssociationState::Idle)
    );
    // Published before the connections close, delivered to the
    // probe in its own time.
    events.fish_for(|e| {
        matches!(
            e,
            RemotingEvent::Disassociated { remote, reason: DisassociationReason::Idle } if *remote == fake
        )
    });

    // The next message starts it again: the lanes dial, the message
    // arrives on the ordinary lane.
    x.tell(Calc::Seq { from: 0, n: 1 });
    let mut user_messages = 0;
    for _ in 0..3 {
        let (lane, mut stream, mut buf) =
            tokio::time::timeout(T, raw_peer::accept_as(&listener, &fake))
                .await
                .expect("started again, the association connects anew");
        if lane == Lane::Ordinary {
            let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Ordinary));
            let deadline = tokio::time::Instant::now() + T;
            while user_messages == 0 {
                while let Ok(Some((pdu, used))) = decoder.decode_frame(&buf) {
                    user_messages += usize::from(pdu.kind() == PduKind::UserMessage);
                    let _ = buf.split_to(used);
                }
                if user_messages == 0 {
                    let n = tokio::time::timeout_at(deadline, stream.read_buf(&mut buf))
                        .await
                        .expect("the message arrives")
                        .unwrap();
                    assert!(n > 0, "closed before the message");
                }
            }
        }
    }
    assert_eq!(user_messages, 1);
    assert_eq!(
        a.remoting.association_state(&fake),
        Some(AssociationState::Active)
    );
}

/// Two nodes: after an ask both stop their associations, with no
/// unreachability or quarantine on either side while they idle (the
/// detector would give a silent node up within about a second); an ask
/// then works again and starts both.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_nodes_stop_and_start_again_without_taking_quiet_for_a_crash() {
    let a = node("alpha", idling()).await;
    let b = node("beta", idling()).await;
    let (a_events, b_events) = (record_events(&a), record_events(&b));
    spawn_calculator(&b, "calc");
    spawn_calculator(&a, "calc");
    let b_calc = remote_ref(&a, &b, "calc");
    assert_eq!(add(&b_calc, 1, 2).await, 3);
    assert_eq!(state(&a, &b), Some(AssociationState::Active));
    assert_eq!(state(&b, &a), Some(AssociationState::Active));
    // A keeps a ref to B's actor, so its stopped association stays; B
    // holds nothing of A once the ask is answered, so its association is
    // removed, detector and all.
    // The detector goes at the failure monitor's next look.
    wait_until(T, "both associations stopped", || {
        state(&a, &b) == Some(AssociationState::Idle)
            && state(&b, &a).is_none()
            && b.remoting.is_reachable(a.remoting.address()).is_none()
    })
    .await;
    // Two and a half times the detector's acceptable pause, idle.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(state(&a, &b), Some(AssociationState::Idle));
    assert_eq!(state(&b, &a), None);
    assert_eq!(a.remoting.is_reachable(b.remoting.address()), Some(true));

    // B starts talking: both associations run again, and keep running
    // while the detectors judge.
    let a_calc = remote_ref(&b, &a, "calc");
    assert_eq!(add(&a_calc, 2, 3).await, 5);
    assert_eq!(state(&b, &a), Some(AssociationState::Active));
    wait_until(T, "A's association started by B's traffic", || {
        state(&a, &b) == Some(AssociationState::Active)
    })
    .await;
    assert_eq!(add(&b_calc, 4, 5).await, 9);
    for (name, events) in [("A", &a_events), ("B", &b_events)] {
        let events = events_so_far(events);
        assert!(
            events.iter().any(|e| matches!(
                e,
                RemotingEvent::Disassociated {
                    reason: DisassociationReason::Idle,
                    ..
                }
            )),
            "{name} saw no idle disassociation: {events:?}"
        );
        let bad: Vec<_> = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    RemotingEvent::Disassociated {
                        reason: DisassociationReason::Unreachable
                            | DisassociationReason::Quarantined,
                        ..
                    } | RemotingEvent::Quarantined { .. }
                )
            })
            .collect();
        assert!(bad.is_empty(), "{name} saw {bad:?}");
    }
}

/// Issue 13, "idle outbound associations are removed": once stopped, an
/// association nothing refers to any more is gone, with its failure
/// detector; while a ref holds it, it stays (stopped) and the ref's next
/// message starts it; a new ref after the removal associates afresh.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_association_nothing_refers_to_is_removed() {
    let a = node("alpha", idling()).await;
    let b = node("beta", idling()).await;
    spawn_calculator(&b, "calc");
    let kept = remote_ref(&a, &b, "calc");
    assert_eq!(add(&kept, 1, 2).await, 3);
    wait_until(T, "A's association stopped", || {
        state(&a, &b) == Some(AssociationState::Idle)
    })
    .await;
    // Held by `kept`: stopped, not removed, and still judged.
    tokio::time::sleep(Duration::from_millis(3 * IDLE_MS)).await;
    assert_eq!(state(&a, &b), Some(AssociationState::Idle));
    assert!(a.remoting.is_reachable(b.remoting.address()).is_some());
    drop(kept);
    wait_until(T, "A's association removed, with its detector", || {
        state(&a, &b).is_none() && a.remoting.is_reachable(b.remoting.address()).is_none()
    })
    .await;

    let fresh = remote_ref(&a, &b, "calc");
    assert_eq!(add(&fresh, 2, 3).await, 5);
    assert_eq!(state(&a, &b), Some(AssociationState::Active));
    assert_eq!(a.remoting.is_reachable(b.remoting.address()), Some(true));
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A remote watch needs the failure detector, so its association is never
/// stopped; once the watch ends (the watched actor stops), it is.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_watch_keeps_the_association_running() {
    let a = node("alpha", idling()).await;
    let b = node("beta", idling()).await;
    let calc = spawn_calculator(&b, "calc");
    let b_calc: ActorRef<Calc> = remote_ref(&a, &b, "calc");
    let (watcher, terminated) = common::spawn_counting_watcher(&a.system, "watcher");
    watcher.tell(b_calc.to_any());
    assert_eq!(add(&b_calc, 1, 1).await, 2);
    common::await_incoming_watches(&b, &a, 1);
    // Four idle times with the watch in place: both still run.
    tokio::time::sleep(Duration::from_millis(4 * IDLE_MS)).await;
    assert_eq!(state(&a, &b), Some(AssociationState::Active));
    assert_eq!(state(&b, &a), Some(AssociationState::Active));
    assert_eq!(terminated.load(Ordering::SeqCst), 0);
    // The watched actor stops: the death notice arrives, and with the
    // watch gone both associations stop (B's, which nothing holds any
    // more, is removed).
    b.system.stop(&calc);
    wait_until(T, "the Terminated", || {
        terminated.load(Ordering::SeqCst) == 1
    })
    .await;
    wait_until(T, "both associations stopped", || {
        state(&a, &b) == Some(AssociationState::Idle)
            && matches!(state(&b, &a), Some(AssociationState::Idle) | None)
    })
    .await;
}

/// With the setting at 0 an association is never stopped.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_never_stops_an_association() {
    let never = RemoteSettings {
        stop_idle_outbound_after: Duration::ZERO,
        ..idling()
    };
    let a = node("alpha", never.clone()).await;
    let b = node("beta", never).await;
    spawn_calculator(&b, "calc");
    let b_calc = remote_ref(&a, &b, "calc");
    assert_eq!(add(&b_calc, 1, 1).await, 2);
    // Three idle times pass: neither association stops.
    tokio::time::sleep(Duration::from_millis(3 * IDLE_MS)).await;
    assert_eq!(state(&a, &b), Some(AssociationState::Active));
    assert_eq!(state(&b, &a), Some(AssociationState::Active));
}

/// Settings: a value shorter than two heartbeat intervals is refused.
#[volley_testkit::each_dispatcher]
#[test]
fn a_too_short_idle_time_is_refused() {
    let settings = RemoteSettings {
        stop_idle_outbound_after: Duration::from_millis(60),
        ..idling()
    };
    let error = settings.validate().unwrap_err().to_string();
    assert!(error.contains("stop_idle_outbound_after"), "{error}");
}
