//! What a node does with the cluster frames it reads: hands them to its
//! hook with the sender's address and uid, or counts why not (no hook,
//! another cluster, a peer it does not dial back, over the rate), keeping
//! the connection; a malformed one is a protocol error like any other.

use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tracing::Level;
use volley_remote::transport::{ClusterHookError, ClusterTransportSettings};
use volley_remote::wire::{Address, ClusterChannel, DisassociateReason, Lane, Pdu};
use volley_remote::RemoteSettings;

use super::{cluster_frame, join, send_until_queued, Got, Recorder};
use crate::common::{eventually, node};
use crate::log_capture;
use crate::raw_peer::{closed_within, handshaken_as};
use crate::wire::protocol_errors::{frames, read_to_end};
use crate::wire_frames::frame;

/// Long enough to see a connection closed at once, were it.
const KEPT: Duration = Duration::from_millis(300);

fn mallory() -> Address {
    "volley://mallory@127.0.0.1:9".parse().unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_reach_the_hook_with_the_senders_address_and_uid() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    let on_a = join(&a, "prod");
    let on_b = join(&b, "prod");
    // Refused until b dials a back (the address check): sent until one
    // gets through.
    eventually("a frame handed to b's hook", || {
        let _ = a.remoting.send_cluster(
            b.remoting.address(),
            b.remoting.uid(),
            ClusterChannel::Swim,
            b"ping",
        );
        !on_b.got().is_empty()
    })
    .await;
    let from_a = Got {
        from: a.remoting.address().clone(),
        uid: a.remoting.uid(),
        channel: ClusterChannel::Swim,
        payload: b"ping".to_vec(),
    };
    assert!(on_b.got().iter().all(|g| *g == from_a), "{:?}", on_b.got());
    assert!(b.remoting.cluster_frame_counts().delivered >= 1);
    send_until_queued(&b, &a, b"pong").await;
    eventually("b's frame handed to a's hook", || !on_a.got().is_empty()).await;
    assert_eq!(on_a.got()[0].from, *b.remoting.address());
    assert_eq!(on_a.got()[0].uid, b.remoting.uid());
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_hook_frames_are_counted_and_the_connection_kept() {
    let b = node("nohook", RemoteSettings::default()).await;
    let mut s = handshaken_as(b.remoting.address(), &mallory(), 7, Lane::Control).await;
    s.write_all(&cluster_frame("prod", b"x")).await.unwrap();
    let counts = || b.remoting.cluster_frame_counts();
    eventually("the frame counted as ignored", || counts().ignored == 1).await;
    assert!(!closed_within(&mut s, KEPT).await, "the connection is kept");
    s.write_all(&cluster_frame("prod", b"y")).await.unwrap();
    eventually("the next frame read and counted", || counts().ignored == 2).await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_from_another_cluster_is_refused_and_counted() {
    log_capture::install();
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    join(&a, "staging-east");
    let on_b = join(&b, "prod-west");
    let named_both = || {
        !log_capture::events(|e| {
            e.level == Level::WARN
                && e.text.contains("another cluster")
                && e.text.contains("theirs=staging-east")
                && e.text.contains("ours=prod-west")
        })
        .is_empty()
    };
    eventually("a foreign frame refused, and logged", || {
        let _ = a.remoting.send_cluster(
            b.remoting.address(),
            b.remoting.uid(),
            ClusterChannel::Swim,
            b"ping",
        );
        b.remoting.cluster_frame_counts().refused_foreign_cluster >= 1 && named_both()
    })
    .await;
    assert!(on_b.got().is_empty(), "{:?}", on_b.got());
    assert_eq!(b.remoting.cluster_frame_counts().delivered, 0);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_from_a_peer_not_dialed_back_is_refused() {
    let b = node("trusting", RemoteSettings::default()).await;
    let on_b = join(&b, "prod");
    // Mallory's claimed address does not answer: never dialed back.
    let mut s = handshaken_as(b.remoting.address(), &mallory(), 7, Lane::Control).await;
    s.write_all(&cluster_frame("prod", b"x")).await.unwrap();
    let counts = || b.remoting.cluster_frame_counts();
    eventually("refused", || counts().refused_not_dialed_back == 1).await;
    assert!(on_b.got().is_empty());
    assert!(!closed_within(&mut s, KEPT).await, "the connection is kept");
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_over_the_inbound_rate_are_dropped_and_counted() {
    let a = node("alpha", RemoteSettings::default()).await;
    let slow = RemoteSettings {
        cluster: ClusterTransportSettings {
            inbound_frames_per_second: 1,
            inbound_burst: 5,
            ..Default::default()
        },
        ..RemoteSettings::default()
    };
    let b = node("beta", slow).await;
    join(&a, "prod");
    let on_b = join(&b, "prod");
    eventually("a first frame handed on", || {
        let _ = a.remoting.send_cluster(
            b.remoting.address(),
            b.remoting.uid(),
            ClusterChannel::Swim,
            b"warm",
        );
        !on_b.got().is_empty()
    })
    .await;
    // Every frame a queued is judged by b, one way or another.
    let judged = || {
        let on_b = b.remoting.cluster_frame_counts();
        on_b.delivered + on_b.refused_rate_limited + on_b.refused_not_dialed_back
    };
    let queued = || a.remoting.cluster_frame_counts().sent;
    eventually("the first frames judged", || judged() == queued()).await;
    let before = b.remoting.cluster_frame_counts();
    let start = Instant::now();
    let sent = (0..40)
        .filter(|_| {
            let (to, uid) = (b.remoting.address(), b.remoting.uid());
            let sent = a
                .remoting
                .send_cluster(to, uid, ClusterChannel::Swim, b"burst");
            sent.is_ok()
        })
        .count() as u64;
    assert_eq!(sent, 40, "a small burst fits the send budget");
    eventually("every frame of the burst judged", || judged() == queued()).await;
    let after = b.remoting.cluster_frame_counts();
    let handed_on = after.delivered - before.delivered;
    let limited = after.refused_rate_limited - before.refused_rate_limited;
    assert_eq!(handed_on + limited, sent);
    // The bucket holds 5 at most, and refills by 1 a second.
    let allowed = 5 + start.elapsed().as_secs() + 1;
    assert!(
        handed_on <= allowed,
        "{handed_on} handed on, at most {allowed} allowed"
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_hook_is_refused() {
    let n = node("onecluster", RemoteSettings::default()).await;
    join(&n, "prod");
    let second = n.remoting.install_cluster_hook(Recorder::new("other"));
    assert_eq!(
        second,
        Err(ClusterHookError::AlreadyInstalled {
            installed: "prod".into()
        })
    );
    n.system.terminate().await;
}

/// A cluster frame that does not decode (an unknown channel, an empty
/// name) closes its connection with a Disassociate naming the protocol
/// error, and the node goes on accepting others.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_cluster_frame_is_a_protocol_error() {
    let b = node("strict", RemoteSettings::default()).await;
    join(&b, "prod");
    let unknown_channel = [9u8, 4, 0, b'p', b'r', b'o', b'd', 1];
    let empty_name = [1u8, 0, 0, 1];
    for body in [&unknown_channel[..], &empty_name[..]] {
        let mut s = handshaken_as(b.remoting.address(), &mallory(), 7, Lane::Control).await;
        s.write_all(&frame(0x40, body)).await.unwrap();
        let said = read_to_end(&mut s, Duration::from_secs(5))
            .await
            .expect("closed");
        let goodbye = frames(&said).into_iter().any(|pdu| {
            matches!(pdu, Pdu::Disassociate(d) if d.reason == DisassociateReason::ProtocolError)
        });
        assert!(
            goodbye,
            "{body:?}: no Disassociate(ProtocolError) in {said:?}"
        );
    }
    let counts = b.remoting.cluster_frame_counts();
    assert_eq!((counts.delivered, counts.ignored), (0, 0));
    let mut s = handshaken_as(b.remoting.address(), &mallory(), 8, Lane::Control).await;
    assert!(!closed_within(&mut s, KEPT).await, "the node still accepts");
    b.system.terminate().await;
}
