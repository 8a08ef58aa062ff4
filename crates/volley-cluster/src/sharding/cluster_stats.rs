//! How many entities every region of the cluster hosts, per shard
//! (Pekko's `GetClusterShardingStats` and `ClusterShardingStats`).
//!
//! The query asks the coordinator for the regions that may host shards,
//! then every one of them for its shards' entity counts, all within one
//! deadline: a region that does not answer in time is left out of the
//! answer, as in Pekko, and a shard that does not answer its region in
//! time is listed in that region's `failed`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use volley::ActorRef;

use super::allocation::ShardId;
use super::protocol::{CoordinatorMsg, RegionControl};
use super::settings::ShardingError;

/// One region's shards and their entity counts (Pekko's
/// `ShardRegionStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardRegionStats {
    /// Each shard that answered and how many entities it has.
    pub stats: BTreeMap<ShardId, u32>,
    /// The shards that did not answer within the region's
    /// `shard_region_query_timeout`.
    pub failed: BTreeSet<ShardId>,
}

/// Every region of the entity type that answered in time, by its node's
/// remoting address (Pekko's `ClusterShardingStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterShardingStats {
    /// The regions, by address.
    pub regions: BTreeMap<String, ShardRegionStats>,
}

impl ClusterShardingStats {
    /// The number of entities in every region that answered.
    pub fn entity_count(&self) -> u64 {
        let counts = self.regions.values().flat_map(|r| r.stats.values());
        counts.map(|n| u64::from(*n)).sum()
    }
}

/// Asks `coordinator` for the regions, then each region for its stats,
/// all within `timeout`.
pub(crate) async fn query(
    coordinator: &ActorRef<CoordinatorMsg>,
    timeout: Duration,
) -> Result<ClusterShardingStats, ShardingError> {
    let deadline = Instant::now() + timeout;
    let regions = coordinator
        .ask(
            |reply_to| CoordinatorMsg::GetCurrentRegions { reply_to },
            timeout,
        )
        .await
        .map_err(|_| ShardingError::QueryTimedOut)?;
    let RegionControl::CurrentRegions { regions } = regions else {
        return Err(ShardingError::QueryTimedOut);
    };
    let mut asked = JoinSet::new();
    for region in regions {
        let left = deadline.saturating_duration_since(Instant::now());
        asked.spawn(async move {
            region
                .ask(|reply_to| RegionControl::GetStats { reply_to }, left)
                .await
        });
    }
    let mut stats = ClusterShardingStats::default();
    while let Some(answer) = asked.join_next().await {
        if let Ok(Ok(RegionControl::Stats {
            address,
            shards,
            failed,
        })) = answer
        {
            let region = ShardRegionStats {
                stats: shards.into_iter().collect(),
                failed: failed.into_iter().collect(),
            };
            stats.regions.insert(address, region);
        }
    }
    Ok(stats)
}
