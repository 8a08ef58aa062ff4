//! What a pool's workers count for the metrics (`[metrics] enabled`):
//! messages handled, activations, steals, and whether a worker is spinning.
//!
//! The counts are on the hottest path, so each worker owns its slot (a
//! cache line of its own) and is its only writer: it adds with a plain
//! load and store, no read-modify-write, and nobody else writes the line.
//! The metrics sampler reads the slots every sample interval and publishes
//! the sums through the facade, so the workers never call it. With metrics
//! off the pool has no slots and a worker's one check is on a flag it
//! keeps in a local.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crossbeam_utils::CachePadded;
use metrics::Histogram;

/// One worker's counts. Written by that worker only.
#[derive(Default)]
pub(super) struct WorkerStats {
    messages: AtomicU64,
    activations: AtomicU64,
    steals: AtomicU64,
    spinning: AtomicBool,
}

/// Adds to a counter that only the calling thread writes: a load and a
/// store, which cost what a plain add does.
#[inline(always)]
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

impl WorkerStats {
    /// One activation begins; returns the activations so far, for the
    /// caller's sampling.
    #[inline(always)]
    pub(super) fn activation(&self) -> u64 {
        let activations = self.activations.load(Relaxed).wrapping_add(1);
        self.activations.store(activations, Relaxed);
        activations
    }

    /// The activation handled `messages` envelopes.
    #[inline(always)]
    pub(super) fn handled(&self, messages: usize) {
        bump(&self.messages, messages as u64);
    }

    /// A steal that took work from a sibling worker's queue.
    #[inline]
    pub(super) fn stolen(&self) {
        bump(&self.steals, 1);
    }

    #[inline]
    pub(super) fn set_spinning(&self, spinning: bool) {
        self.spinning.store(spinning, Relaxed);
    }
}

/// A pool's metering when `[metrics] enabled`: a slot per worker, and the
/// histogram of sampled mailbox depths.
pub(super) struct PoolStats {
    pub(super) workers: Vec<CachePadded<WorkerStats>>,
    pub(super) mailbox_depth: Histogram,
}

/// Every this many activations a worker records the depth of the mailbox
/// it is about to run: a sample, not a figure per activation, so the
/// histogram's cost (an atomic push with most exporters) stays far off the
/// per-message path.
pub(super) const DEPTH_SAMPLE_EVERY: u64 = 64;

impl PoolStats {
    pub(super) fn new(threads: usize, system: &str, dispatcher: &str) -> Self {
        PoolStats {
            workers: (0..threads).map(|_| CachePadded::default()).collect(),
            mailbox_depth: metrics::histogram!(
                "volley_mailbox_depth",
                "system" => system.to_string(),
                "dispatcher" => dispatcher.to_string()
            ),
        }
    }

    /// The sums over the workers, as the sampler publishes them.
    pub(super) fn sample(&self) -> Counts {
        let mut counts = Counts::default();
        for w in &self.workers {
            counts.messages += w.messages.load(Relaxed);
            counts.activations += w.activations.load(Relaxed);
            counts.steals += w.steals.load(Relaxed);
            counts.spinning += usize::from(w.spinning.load(Relaxed));
        }
        counts
    }
}

/// A pool's totals at one sample.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Envelopes handled (user messages, timers, `Terminated`...).
    pub(crate) messages: u64,
    /// Turns actors were given on a worker.
    pub(crate) activations: u64,
    /// Batches of tasks taken from a sibling worker's queue.
    pub(crate) steals: u64,
    /// Workers spinning for work now.
    pub(crate) spinning: usize,
}
