//! The store trait: what the region and the coordinator record.

use std::collections::BTreeSet;

use super::error::StoreError;
use crate::sharding::ShardId;

/// A change to one shard's remembered entities, applied as one
/// transaction: `started` are added, then `stopped` removed (an id in
/// both ends up removed). Pekko's `RememberEntitiesShardStore.Update`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreUpdate {
    /// Entities that started, to start again with their shard.
    pub started: Vec<String>,
    /// Entities that stopped for good (passivated by their own choice),
    /// not to start again.
    pub stopped: Vec<String>,
}

impl StoreUpdate {
    /// An update that records `ids` as started.
    pub fn started<I: IntoIterator<Item = S>, S: Into<String>>(ids: I) -> Self {
        Self {
            started: ids.into_iter().map(Into::into).collect(),
            stopped: Vec::new(),
        }
    }

    /// An update that records `ids` as stopped.
    pub fn stopped<I: IntoIterator<Item = S>, S: Into<String>>(ids: I) -> Self {
        Self {
            started: Vec::new(),
            stopped: ids.into_iter().map(Into::into).collect(),
        }
    }

    /// Refuses an empty id before anything is written.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        let ids = self.started.iter().chain(&self.stopped);
        if ids.into_iter().any(String::is_empty) {
            return Err(StoreError::EmptyEntityId);
        }
        Ok(())
    }
}

/// Where remembered entities and the coordinator's allocated shards are
/// kept. One instance serves every entity type of a node, which is why
/// each call names its `entity_type`.
///
/// Synchronous, since actor handlers are: a region or coordinator calls
/// it from its handler, and with a file store that blocks the handler's
/// thread for the write (a disk sync, a few milliseconds at most on a
/// local disk), so the write must not be on every message: a shard
/// records an entity when it starts and stops, not per delivery.
///
/// **Durability:** when a write (`update`, `remove_shard`, `add_shard`)
/// returns `Ok`, the change is durable: for a file store it is synced to
/// disk, and survives a crash of the process or the machine that follows.
/// When it returns an error, nothing of it was applied.
pub trait RememberStore: Send + Sync {
    /// Records entities that started and stopped in `shard` (Pekko's
    /// `Update`).
    fn update(
        &self,
        entity_type: &str,
        shard: ShardId,
        update: &StoreUpdate,
    ) -> Result<(), StoreError>;

    /// The entities remembered for `shard`, to start again when it starts
    /// (Pekko's `GetEntities`).
    fn entities(&self, entity_type: &str, shard: ShardId) -> Result<BTreeSet<String>, StoreError>;

    /// The shards that have at least one remembered entity here: what a
    /// region reports to the coordinator when it registers after a restart.
    fn shards_with_entities(&self, entity_type: &str) -> Result<BTreeSet<ShardId>, StoreError>;

    /// Forgets every entity of `shard`: its region handed it off, and the
    /// new home records them.
    fn remove_shard(&self, entity_type: &str, shard: ShardId) -> Result<(), StoreError>;

    /// Records that the coordinator allocated `shard` (Pekko's
    /// `RememberEntitiesCoordinatorStore.AddShard`); never removed, so that
    /// a new coordinator starts every shard that may hold entities.
    fn add_shard(&self, entity_type: &str, shard: ShardId) -> Result<(), StoreError>;

    /// Every shard the coordinator recorded (Pekko's `GetShards`).
    fn allocated_shards(&self, entity_type: &str) -> Result<BTreeSet<ShardId>, StoreError>;
}
