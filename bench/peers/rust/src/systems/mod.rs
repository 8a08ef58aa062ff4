//! One harness per peer framework. Each owns its runtime for the life of the
//! process so that runtime start-up is never part of a measurement.

mod actix_peer;
mod kameo_peer;
#[cfg(feature = "cluster")]
pub mod ractor_cluster_peer;
mod ractor_peer;
mod tokio_peer;

use crate::cli::System;
use crate::plan::{Outcome, Plan};
use hdrhistogram::Histogram;
use std::time::Duration;

/// Result of the `spawn` scenario before it is divided per actor.
pub struct SpawnOutcome {
    /// Spawning N actors and waiting until all of them are started.
    pub spawn: Duration,
    /// Asking all N to stop and waiting until all of them are stopped.
    pub stop: Duration,
    /// VmRSS growth between "before spawning" and "all N alive".
    pub rss_growth: i64,
}

pub trait Harness {
    /// Runs one ping-pong round; the caller verifies the counts.
    fn pingpong(&mut self, plan: &Plan) -> Result<Outcome, String>;
    fn spawn(&mut self, actors: u64) -> Result<SpawnOutcome, String>;
    /// `warmup` unrecorded round trips, then `requests` recorded into `hist`.
    fn ask(&mut self, warmup: u64, requests: u64, hist: &mut Histogram<u64>) -> Result<(), String>;
}

pub fn harness(system: System) -> Box<dyn Harness> {
    match system {
        System::Actix => Box::new(actix_peer::ActixHarness::new()),
        System::Ractor => Box::new(ractor_peer::RactorHarness::new()),
        System::Kameo => Box::new(kameo_peer::KameoHarness::new()),
        System::Tokio => Box::new(tokio_peer::TokioHarness::new()),
    }
}

/// The runtime used by ractor, kameo and the plain-tokio baseline: one worker
/// thread per core of the 2-core benchmark machine.
pub fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs `fut` as a task on a worker thread of `rt` (not on the main thread,
/// which `block_on` would use) so the driver competes for the same workers
/// as the actors, as it would inside a real application.
pub fn run_on_workers<F>(rt: &tokio::runtime::Runtime, fut: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    rt.block_on(rt.spawn(fut)).expect("benchmark task panicked")
}
