//! The prometheus example, scraped over HTTP: every metric volley
//! documents (remoting's included) is on `/metrics`, with the system's
//! label.

use std::time::Duration;

use crate::common;

use common::request;
use volley_examples::prometheus_app::{exercise, install_exporter, start, Peer};

async fn scrape(addr: std::net::SocketAddr) -> String {
    let (status, body) = request(addr, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_metric_is_scraped() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    install_exporter(addr).unwrap();
    let (system, worker) = start().unwrap();
    let peer = Peer::start(&system).await.unwrap();
    exercise(&system, &worker).await;
    peer.send_notes(10);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = match tokio::net::TcpStream::connect(addr).await {
            Ok(_) => scrape(addr).await,
            Err(_) => String::new(),
        };
        let missing: Vec<_> = volley::METRIC_NAMES
            .iter()
            .chain(volley_remote::REMOTE_METRIC_NAMES)
            .filter(|name| !body.contains(&format!("{name}{{")))
            .collect();
        if missing.is_empty() {
            assert!(
                body.contains("volley_actor_restarts_total{system=\"metrics-demo\"} 1"),
                "{body}"
            );
            assert!(body.contains("reason=\"recipient_terminated\""), "{body}");
            assert!(
                body.contains(&format!("remote=\"{}\"", peer.address())),
                "{body}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "missing {missing:?} in:\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    peer.stop().await;
    system.terminate().await;
}
