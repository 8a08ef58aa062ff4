//! The store in memory: for tests, and the model the file store is
//! checked against. Keeps nothing across a restart.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::error::StoreError;
use super::remember::{RememberStore, StoreUpdate};
use crate::sharding::ShardId;

/// Remembered entities and allocated shards in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    entities: BTreeMap<(String, ShardId), BTreeSet<String>>,
    shards: BTreeMap<String, BTreeSet<ShardId>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every operation leaves the state whole before it can panic, so
        // a poisoned lock still guards a consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RememberStore for MemoryStore {
    fn update(
        &self,
        entity_type: &str,
        shard: ShardId,
        update: &StoreUpdate,
    ) -> Result<(), StoreError> {
        update.check()?;
        let mut state = self.state();
        let key = (entity_type.to_owned(), shard);
        let ids = state.entities.entry(key.clone()).or_default();
        ids.extend(update.started.iter().cloned());
        for id in &update.stopped {
            ids.remove(id);
        }
        if ids.is_empty() {
            state.entities.remove(&key);
        }
        Ok(())
    }

    fn entities(&self, entity_type: &str, shard: ShardId) -> Result<BTreeSet<String>, StoreError> {
        let key = (entity_type.to_owned(), shard);
        Ok(self.state().entities.get(&key).cloned().unwrap_or_default())
    }

    fn shards_with_entities(&self, entity_type: &str) -> Result<BTreeSet<ShardId>, StoreError> {
        let state = self.state();
        let keys = state.entities.keys();
        Ok(keys
            .filter(|(name, _)| name == entity_type)
            .map(|&(_, shard)| shard)
            .collect())
    }

    fn remove_shard(&self, entity_type: &str, shard: ShardId) -> Result<(), StoreError> {
        let key = (entity_type.to_owned(), shard);
        self.state().entities.remove(&key);
        Ok(())
    }

    fn add_shard(&self, entity_type: &str, shard: ShardId) -> Result<(), StoreError> {
        let mut state = self.state();
        let shards = state.shards.entry(entity_type.to_owned()).or_default();
        shards.insert(shard);
        Ok(())
    }

    fn allocated_shards(&self, entity_type: &str) -> Result<BTreeSet<ShardId>, StoreError> {
        let shards = self.state().shards.get(entity_type).cloned();
        Ok(shards.unwrap_or_default())
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
