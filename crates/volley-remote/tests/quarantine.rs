//! Quarantine: an incarnation the failure detector gave up is refused for
//! good, with `Quarantined` in the handshake answer, while a new
//! incarnation at the same address (a restart) associates at once.

mod common;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_up_incarnation_is_refused_and_a_new_one_is_welcome() {
    // A node nobody listens for: this one only dials in. It is a known
    // peer: an unknown one whose address does not answer is never
    // associated, so there would be nothing to quarantine.
    let port = common::free_port();
    let fake: Address = format!("volley://fake@127.0.0.1:{port}").parse().unwrap();
    let mut settings = RemoteSettings {
        failure_detector: FailureDetectorSettings {
            heartbeat_interval_ms: 50,
            acceptable_heartbeat_pause_ms: 300,
            ..FailureDetectorSettings::default()
        },
        ..RemoteSettings::default()
    };
    settings.trust.known_peers = vec![fake.to_string()];
    let a = node("q-a", settings).await;
    let events = common::record_events(&a);
    let to = a.remoting.address().clone();
    let (mut control, status) = handshake_as(&to, &fake, 1111, Lane::Control).await;
    assert_eq!(status, HandshakeStatus::Accepted);
    let mut beat = BytesMut::new();
    Encoder::heartbeat(&mut beat);
    for _ in 0..10 {
        control.write_all(&beat).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.remoting.is_reachable(&fake), Some(true));
    // Silence: the detector gives incarnation 1111 up and quarantines it.
    events.fish_for(|e| matches!(e, RemotingEvent::Quarantined { uid: 1111, .. }));
    assert_eq!(a.remoting.is_reachable(&fake), Some(false));
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
    drop(control);
    a.system.terminate().await;
}
