//! Quarantine: an incarnation the failure detector gave up is refused for
//! good, with `Quarantined` in the handshake answer, while a new
//! incarnation at the same address (a restart) associates at once.

mod common;
mod log_capture;

use std::time::Duration;

use bytes::BytesMut;
use common::{node, T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Encoder, HandshakeRequest, HandshakeStatus, Lane, Pdu,
    Preamble, PROTOCOL_VERSION,
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
/// (nobody listens for it) and gives its incarnation 1111 up after a few
/// heartbeats. Returns the node, with that node's address and the event
/// recorder.
async fn quarantine_a_dialer(
    name: &str,
    mut settings: RemoteSettings,
) -> (common::Node, Address, TestProbe<RemotingEvent>) {
    // A known peer: an unknown one whose address does not answer is never
    // associated, so there would be nothing to quarantine.
    let port = common::free_port();
    let fake: Address = format!("volley://fake@127.0.0.1:{port}").parse().unwrap();
    settings.failure_detector = FailureDetectorSettings {
        heartbeat_interval_ms: 50,
        acceptable_heartbeat_pause_ms: 300,
        ..FailureDetectorSettings::default()
    };
    settings.trust.known_peers = vec![fake.to_string()];
    let a = node(name, settings).await;
    let events = common::record_events(&a);
    let to = a.remoting.address().clone();
    let (mut control, status) = handshake_as(&to, &fake, 1111, Lane::Control).await;
    assert_eq!(status, HandshakeStatus::Accepted);
    let mut beat = BytesMut::new();
    Encoder::heartbeat(&mut beat);
    for _ in 0..10 {
        control.write_all(&beat).await.unwrap();
        // Heartbeats at the detector's interval: a live peer, simulated.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.remoting.is_reachable(&fake), Some(true));
    // Silence: the detector gives incarnation 1111 up and quarantines it.
    events.fish_for(|e| matches!(e, RemotingEvent::Quarantined { uid: 1111, .. }));
    assert_eq!(a.remoting.is_reachable(&fake), Some(false));
    (a, fake, events)
}

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
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantined_association_is_removed_after_its_time_unless_kept_for_ever() {
    for keep_ms in [400, 0] {
        let settings = RemoteSettings {
            stop_idle_outbound_after_ms: 200,
            remove_quarantined_association_after_ms: keep_ms,
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
