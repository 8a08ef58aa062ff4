//! What a region counts, read through its entity type's `Sharding`.

use std::sync::atomic::AtomicU64;

/// A region's counters, shared with whoever started it.
#[derive(Debug, Default)]
pub struct RegionCounters {
    /// Messages its full buffer refused (each a dead letter too).
    pub dropped: AtomicU64,
    /// Hand-offs that went ahead without every region's marker, after
    /// `handoff_timeout` (design §4): messages those regions sent before
    /// may reach the shard's next home after later ones.
    pub marker_timeouts: AtomicU64,
    /// Operations of the remembered-entities store that failed on this
    /// node, for the entity type (each also a `RememberStoreFailed` event).
    pub store_failures: AtomicU64,
    /// Entities' messages this region sent other regions in batches of
    /// more than one (`ShardEnvelope::Messages`).
    pub batched: AtomicU64,
}
