//! A database client that backs off while its database is down.
//!
//! Run with `cargo run -p volley-examples --example backoff_db`: the client
//! connects to a closed local port, fails in `pre_start`, and its parent's
//! `SupervisorStrategy::restart_with_backoff` restarts it after 50 ms,
//! 100 ms, 200 ms, … up to 2 s. It prints each attempt and stops after
//! eight.

use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use volley::ActorSystem;
use volley_examples::backoff_db_app::{closed_port, start};

const ATTEMPTS: u32 = 8;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let system = ActorSystem::new("backoff-db")?;
    let addr = closed_port()?;
    let began = Instant::now();
    let (tx, rx) = channel();
    start(
        &system,
        addr,
        Duration::from_millis(50),
        Duration::from_secs(2),
        move |attempt| {
            let _ = tx.send(attempt);
        },
    )?;
    let mut last = None;
    for attempt in rx.iter().take(ATTEMPTS as usize) {
        let gap = last.map(|l: Instant| format!(" (+{:?})", attempt.at.duration_since(l)));
        println!(
            "attempt {} at {:>8.3?}{}: {}",
            attempt.number,
            attempt.at.duration_since(began),
            gap.unwrap_or_default(),
            attempt.error.as_deref().unwrap_or("connected")
        );
        last = Some(attempt.at);
    }
    system.terminate().await;
    Ok(())
}
