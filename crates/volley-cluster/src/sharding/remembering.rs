//! An entity type's remembered entities as its region, shards and
//! coordinator use them: the node's store, the type's name in it, and
//! what happens when the store fails (Pekko stops the shard; so does
//! volley, and it says why on the event stream).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use volley::ActorSystem;

use super::allocation::ShardId;
use super::region_counters::RegionCounters;
use super::store::{RememberStore, SharedStoreError, StoreError};

/// A remembered-entities store operation failed, on this node: published
/// on the event stream, counted in `Sharding::store_failures`, logged.
/// What follows depends on `operation` (docs/reference/sharding.md,
/// "Remembered entities"): a shard whose read or write failed stops, and
/// its region starts it again after `shard_failure_backoff`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RememberStoreFailed {
    /// The entity type.
    pub entity_type: String,
    /// The shard concerned, if one is.
    pub shard: Option<ShardId>,
    /// What was done: `read entities`, `record a start`, `record a stop`,
    /// `record a hand-over`, `forget a shard`, `read shards`,
    /// `record a shard`.
    pub operation: &'static str,
    /// Why it failed.
    pub error: SharedStoreError,
}

/// An entity type's store, shared by its region, shards and coordinator.
#[derive(Clone)]
pub(crate) struct Remembering {
    pub(crate) store: Arc<dyn RememberStore>,
    pub(crate) entity_type: Arc<str>,
    pub(crate) counters: Arc<RegionCounters>,
}

impl Remembering {
    /// Reports a failed store operation: counted, logged, published.
    pub(crate) fn failed(
        &self,
        system: &ActorSystem,
        shard: Option<ShardId>,
        operation: &'static str,
        error: StoreError,
    ) {
        self.counters.store_failures.fetch_add(1, Relaxed);
        tracing::error!(entity_type = %self.entity_type, ?shard, operation, %error, "the remembered-entities store failed");
        system.event_stream().publish(RememberStoreFailed {
            entity_type: self.entity_type.to_string(),
            shard,
            operation,
            error: error.into(),
        });
    }
}
