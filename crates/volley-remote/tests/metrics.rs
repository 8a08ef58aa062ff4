//! Remoting's metrics per association (`[metrics] enabled` on the system):
//! bytes out and in, connections made, the detector's phi, and the count
//! of associations, read back from a recorder installed for this binary.

mod common;

use std::time::{Duration, Instant};

use common::{add, node_settings, node_with, remote_ref, spawn_calculator, T};
use volley::MetricsSettings;
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::{RemoteSettings, REMOTE_METRIC_NAMES};
use volley_testkit::RecordedMetrics;

fn metered() -> volley::Settings {
    volley::Settings {
        metrics: MetricsSettings {
            enabled: true,
            sample_interval_ms: 20,
        },
        ..node_settings()
    }
}

fn quick_heartbeats() -> RemoteSettings {
    RemoteSettings {
        failure_detector: FailureDetectorSettings {
            heartbeat_interval_ms: 50,
            ..FailureDetectorSettings::default()
        },
        ..RemoteSettings::default()
    }
}

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < T, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

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
    // One connection per lane that carried something: control and
    // ordinary at least.
    let connects = value("volley_remote_connects_total").unwrap();
    assert!((2..=3).contains(&connects), "{connects} connections");
    eventually("phi judged", || {
        recorded
            .gauge("volley_remote_phi", &labels)
            .is_some_and(|phi| phi.is_finite() && phi >= 0.0)
    })
    .await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_reported_when_metrics_are_off() {
    let recorded = RecordedMetrics::install();
    let a = node_with("gamma", node_settings(), quick_heartbeats()).await;
    let b = node_with("delta", node_settings(), quick_heartbeats()).await;
    spawn_calculator(&b, "calc");
    assert_eq!(add(&remote_ref(&a, &b, "calc"), 1, 2).await, 3);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !recorded.series().iter().any(|s| s.contains("system=gamma")),
        "{:?}",
        recorded.series()
    );
    a.system.terminate().await;
    b.system.terminate().await;
}
