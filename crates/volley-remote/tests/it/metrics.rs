//! Remoting's metrics per association (`[metrics] enabled` on the system):
//! bytes and frames out and in, batch sizes, the outbound queue,
//! connections and reconnections, the detector's phi, heartbeat round
//! trips, and the count of associations, read back from a recorder
//! installed for this binary.

use crate::common;

use std::time::{Duration, Instant};

use common::{
    add, eventually, metered, node_settings, node_with, quick_heartbeats, remote_ref,
    spawn_calculator, Calc, T,
};
use volley_remote::{RemoteSettings, REMOTE_METRIC_NAMES};
use volley_testkit::RecordedMetrics;

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_association_reports_its_traffic_connections_and_phi() {
    let recorded = RecordedMetrics::install();
    let a = node_with("alpha", metered(), quick_heartbeats()).await;
    let b = node_with("beta", metered(), quick_heartbeats()).await;
    spawn_calculator(&b, "calc");
    let calc = remote_ref(&a, &b, "calc");
    for i in 0..100 {
        assert_eq!(add(&calc, i, 1).await, i + 1);
    }
    let labels = format!("remote={},system=alpha", b.remoting.address());
    let value = |name: &str| recorded.counter(name, &labels);
    // 100 asks of some tens of bytes each way, heartbeats besides.
    eventually("traffic counted both ways", || {
        value("volley_remote_bytes_out_total").is_some_and(|b| b > 2_000)
            && value("volley_remote_bytes_in_total").is_some_and(|b| b > 2_000)
    })
    .await;
    // Each ask is a frame each way (a reply-handle declaration besides,
    // for some), heartbeats on top.
    eventually("frames counted both ways", || {
        value("volley_remote_frames_out_total").is_some_and(|f| f >= 100)
            && value("volley_remote_frames_in_total").is_some_and(|f| f >= 100)
    })
    .await;
    let frames_out = value("volley_remote_frames_out_total").unwrap();
    let batches = recorded
        .histogram("volley_remote_batch_frames", &labels)
        .unwrap();
    assert!(batches.iter().all(|f| *f >= 1.0), "{batches:?}");
    assert!(
        batches.iter().sum::<f64>() as u64 >= frames_out.min(100),
        "the batches hold the frames: {batches:?}"
    );
    let sizes = recorded
        .histogram("volley_remote_batch_bytes", &labels)
        .unwrap();
    assert_eq!(sizes.len(), batches.len(), "one of each per batch");
    assert!(
        sizes.iter().all(|b| *b >= 5.0),
        "a frame is 5 bytes at least"
    );
    // One connection per lane that carried something: control and
    // ordinary at least.
    let connects = value("volley_remote_connects_total").unwrap();
    assert!((2..=3).contains(&connects), "{connects} connections");
    assert_eq!(value("volley_remote_reconnects_total"), Some(0));
    assert_eq!(value("volley_remote_control_refusals_total"), Some(0));
    assert_eq!(value("volley_remote_superseded_handshakes_total"), Some(0));
    // Heartbeats go on being queued; between them the queue is empty.
    eventually("everything sent taken by a writer", || {
        recorded.gauge("volley_remote_outbound_queue_bytes", &labels) == Some(0.0)
    })
    .await;
    eventually("phi judged", || {
        recorded
            .gauge("volley_remote_phi", &labels)
            .is_some_and(|phi| phi.is_finite() && phi >= 0.0)
    })
    .await;
    // Both nodes have connections to each other (beta answers on its own),
    // so alpha's heartbeats come back as acks and are timed.
    eventually("heartbeat round trips recorded", || {
        recorded
            .histogram("volley_remote_heartbeat_rtt_seconds", &labels)
            .is_some_and(|rtts| !rtts.is_empty())
    })
    .await;
    let rtts = recorded
        .histogram("volley_remote_heartbeat_rtt_seconds", &labels)
        .unwrap();
    assert!(
        rtts.iter().all(|s| *s > 0.0 && *s < 5.0),
        "plausible round trips: {rtts:?}"
    );
    let latest = a.remoting.heartbeat_rtt(b.remoting.address()).unwrap();
    assert!(latest > Duration::ZERO && latest < Duration::from_secs(5));
    assert_eq!(
        recorded.gauge("volley_remote_associations", "system=alpha"),
        Some(1.0)
    );
    for name in REMOTE_METRIC_NAMES {
        assert!(
            recorded
                .series()
                .iter()
                .any(|s| s.starts_with(&format!("{name}{{"))),
            "{name} missing from {:?}",
            recorded.series()
        );
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_away_shows_as_queued_bytes_then_as_reconnects() {
    let recorded = RecordedMetrics::install();
    let remote = RemoteSettings {
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        ..quick_heartbeats()
    };
    let a = node_with("epsilon", metered(), remote).await;
    // B comes back on its port: one below the ephemeral range, which A's
    // reconnecting lanes cannot take as their own while B is away.
    let b = node_with(
        "zeta",
        node_settings(),
        RemoteSettings {
            port: common::free_port(),
            ..quick_heartbeats()
        },
    )
    .await;
    spawn_calculator(&b, "calc");
    let calc = remote_ref(&a, &b, "calc");
    assert_eq!(add(&calc, 1, 2).await, 3);
    let port = b.remoting.address().port();
    let labels = format!("remote={},system=epsilon", b.remoting.address());
    b.remoting.shutdown();
    b.system.terminate().await;

    // What is sent while the peer is away waits in the lane's queue.
    let queued = || {
        recorded
            .gauge("volley_remote_outbound_queue_bytes", &labels)
            .unwrap_or(0.0)
    };
    let start = Instant::now();
    while queued() == 0.0 {
        assert!(start.elapsed() < T, "nothing seen queued");
        calc.tell(Calc::Seq { from: 0, n: 1 });
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let b2 = node_with(
        "zeta",
        node_settings(),
        RemoteSettings {
            port,
            ..quick_heartbeats()
        },
    )
    .await;
    spawn_calculator(&b2, "calc");
    eventually("a lane reconnected", || {
        recorded
            .counter("volley_remote_reconnects_total", &labels)
            .is_some_and(|r| r >= 1)
    })
    .await;
    eventually("the queue drained", || queued() == 0.0).await;
    a.system.terminate().await;
    b2.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_reported_when_metrics_are_off() {
    let recorded = RecordedMetrics::install();
    let a = node_with("gamma", node_settings(), quick_heartbeats()).await;
    let b = node_with("delta", node_settings(), quick_heartbeats()).await;
    spawn_calculator(&b, "calc");
    assert_eq!(add(&remote_ref(&a, &b, "calc"), 1, 2).await, 3);
    // A window for a wrongly reported series to show (what is checked).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !recorded.series().iter().any(|s| s.contains("system=gamma")),
        "{:?}",
        recorded.series()
    );
    a.system.terminate().await;
    b.system.terminate().await;
}
