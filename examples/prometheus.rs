//! volley's runtime metrics on a Prometheus endpoint.
//!
//! Run with `cargo run -p volley-examples --example prometheus`, then
//! `curl http://127.0.0.1:9091/metrics`. Ctrl-C stops it.

use std::time::Duration;

use volley_examples::prometheus_app::{exercise, install_exporter, start, Job, Peer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let addr = "127.0.0.1:9091".parse()?;
    install_exporter(addr)?;
    let (system, worker) = start()?;
    let peer = Peer::start(&system).await?;
    exercise(&system, &worker).await;
    println!("serving volley's metrics on http://{addr}/metrics; Ctrl-C stops");
    let mut ticks = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = ticks.tick() => {
                worker.tell(Job::Work);
                peer.send_notes(1);
            }
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    peer.stop().await;
    system.terminate().await;
    Ok(())
}
