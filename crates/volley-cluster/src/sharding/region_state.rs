//! What a region hosts, on request (Pekko's `GetShardRegionState` and
//! `CurrentShardRegionState`): its shards and each shard's entities.
//!
//! The region asks each of its shards, which answer from their own
//! maps, and collects the answers off the region's thread: a shard
//! that does not answer within `shard_region_query_timeout` (busy, or
//! stopping) is listed as failed rather than holding the answer, as in
//! Pekko.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::sync::oneshot;
use volley::ActorRef;

use super::allocation::ShardId;
use super::shard::ShardMsg;

/// One shard and the ids of its entities (Pekko's `ShardState`): those
/// running, stopping, or remembered and waiting to start again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardState {
    /// The shard.
    pub shard: ShardId,
    /// Its entities' ids.
    pub entity_ids: BTreeSet<String>,
}

/// What a region hosts (Pekko's `CurrentShardRegionState`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CurrentShardRegionState {
    /// The shards that answered, in shard order.
    pub shards: Vec<ShardState>,
    /// The shards that did not answer within
    /// `shard_region_query_timeout`.
    pub failed: BTreeSet<ShardId>,
}

impl CurrentShardRegionState {
    /// Every entity id of every shard that answered.
    pub fn entity_ids(&self) -> impl Iterator<Item = &str> {
        self.shards
            .iter()
            .flat_map(|s| s.entity_ids.iter().map(String::as_str))
    }
}

/// Asks each of `shards` for its state and hands the whole to `done`,
/// waiting at most `timeout` for all; runs on `runtime`, so the region
/// goes on meanwhile.
pub(crate) fn collect<M: Send + 'static>(
    runtime: &tokio::runtime::Handle,
    shards: Vec<(ShardId, ActorRef<ShardMsg<M>>)>,
    timeout: Duration,
    done: impl FnOnce(CurrentShardRegionState) + Send + 'static,
) {
    let asked: Vec<_> = shards
        .into_iter()
        .map(|(shard, actor)| {
            let (answer, answered) = oneshot::channel();
            actor.tell(ShardMsg::GetState(answer));
            (shard, answered)
        })
        .collect();
    runtime.spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut state = CurrentShardRegionState::default();
        for (shard, answered) in asked {
            match tokio::time::timeout_at(deadline, answered).await {
                Ok(Ok(shard_state)) => state.shards.push(shard_state),
                _ => {
                    state.failed.insert(shard);
                }
            }
        }
        state.shards.sort_by_key(|s| s.shard);
        done(state);
    });
}

#[cfg(test)]
#[path = "region_state_tests.rs"]
mod tests;
