//! The cluster in OS processes on 127.0.0.1 (design §6.2): each node is
//! this test binary run again (`node`, started by `cluster_node` below),
//! reachable only through its TCP relay (`volley_testkit::relay`), so a
//! test can kill -9, SIGSTOP or cut off a node without taking itself
//! down. `ProcessCluster::start(n)` starts `n` of them; its waits read the
//! nodes' event lines with a deadline and fail with every node's output.
//!
//! The cases take turns (`serial`): each starts several processes whose
//! failure detectors must not starve one another on a small machine.
//!
//! A failed case saves its transcript (every node's lines, with arrival
//! times) and names the file; with `VOLLEY_KEEP_TRANSCRIPTS` set a case
//! that passed keeps its own too, and `RUST_LOG=debug` (a plain level)
//! sets the nodes' log level.

mod blocking;
mod cluster;
mod config;
mod entities;
mod flooding;
mod forming;
mod killing;
mod leaving;
mod lives;
mod node;
mod partitioning;
mod process;
mod restarting;
mod sharding;
mod singleton;
mod transcript;

use std::sync::{Mutex, MutexGuard};

pub use cluster::ProcessCluster;

static SERIAL: Mutex<()> = Mutex::new(());

/// This case's turn; a case that failed before does not stop the others.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The node program of the other cases: does nothing unless started by
/// one of them (`process::NodeProcess`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the node process of the process cases; runs only when they start it"]
async fn cluster_node() {
    node::run_node().await;
}
