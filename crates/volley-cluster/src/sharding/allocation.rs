//! Where the coordinator puts a shard, and which shards it moves: the
//! least-shards strategy with rebalance limits, the knobs of Akka's
//! `LeastShardAllocationStrategy` (since Akka 2.6.10).
//!
//! A pure function of the current allocation, so that it is tested on its
//! own, with the scenarios of Akka's `LeastShardAllocationStrategySpec`.
//!
//! - **Allocation** picks the most suitable region: one whose member is
//!   not on its way out (Leaving, Exiting, Down) before one that is, then
//!   the newest application version (a rolling update moves shards
//!   forward, never back), then the fewest shards.
//! - **Rebalance** first takes, from every region above the optimal count
//!   (the shard count divided by the region count, rounded up), what it
//!   has above it. When no region is above it but some region is two or
//!   more below, it takes one shard from each region at the optimal count,
//!   as many as the regions below lack. Either way at most the limit:
//!   `relative_limit` of all shards, at most `absolute_limit`, at least 1.
//!   Shards are taken oldest allocation first.
//! - It does not rebalance while a rebalance is in progress, while any
//!   member is unreachable or joining (a rebalance needs every region's
//!   acknowledgement, and a joining member will soon take shards), or
//!   while regions run different application versions (a rolling update).

use std::fmt;

use super::version::AppVersion;
use crate::member::{ClusterState, MemberStatus};

/// A shard's number: the message extractor maps each entity id to one of
/// `number_of_shards` shards.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ShardId(pub u32);

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard {}", self.0)
    }
}

/// One region as the strategy sees it: its member's status and version,
/// and its shards in the order they were allocated to it.
#[derive(Debug, Clone)]
pub struct RegionEntry<'a, R> {
    /// The region (for the coordinator, its member).
    pub region: R,
    /// Its member's status.
    pub status: MemberStatus,
    /// Its member's application version.
    pub app_version: &'a str,
    /// Its shards, oldest allocation first.
    pub shards: &'a [ShardId],
}

impl<R> RegionEntry<'_, R> {
    fn is_leaving(&self) -> bool {
        matches!(
            self.status,
            MemberStatus::Leaving
                | MemberStatus::Exiting
                | MemberStatus::Down
                | MemberStatus::Removed
        )
    }

    /// Akka's `ShardSuitabilityOrdering`: less is more suitable.
    fn suitability(&self, other: &Self) -> std::cmp::Ordering {
        self.is_leaving()
            .cmp(&other.is_leaving())
            .then_with(|| AppVersion(other.app_version).cmp(&AppVersion(self.app_version)))
            .then_with(|| self.shards.len().cmp(&other.shards.len()))
    }
}

/// What else a rebalance waits for, from the cluster's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RebalanceGate {
    /// Whether some shards are still being handed off.
    pub in_progress: bool,
    /// Whether some member is unreachable.
    pub unreachable: bool,
    /// Whether some member is still joining.
    pub joining: bool,
}

impl RebalanceGate {
    /// The gate as the cluster's state sets it (Akka's
    /// `isAGoodTimeToRebalance`): closed while any member is unreachable
    /// (its region could not acknowledge a hand-off) or still joining
    /// (Joining or WeaklyUp: it should be Up soon, and take shards then).
    pub fn of_cluster(state: &ClusterState) -> Self {
        RebalanceGate {
            in_progress: false,
            unreachable: !state.unreachable.is_empty(),
            joining: state
                .members
                .iter()
                .any(|m| matches!(m.status, MemberStatus::Joining | MemberStatus::WeaklyUp)),
        }
    }
}

/// A limit the strategy refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum AllocationSettingsError {
    /// `absolute_limit` was 0: no rebalance could ever move a shard.
    #[error("rebalance absolute_limit must be at least 1")]
    ZeroAbsoluteLimit,
    /// `relative_limit` was not in (0, 1].
    #[error("rebalance relative_limit must be in (0, 1], not {0}")]
    RelativeLimitOutOfRange(f64),
}

/// The least-shards allocation strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeastShardAllocation {
    absolute_limit: usize,
    relative_limit: f64,
}

impl Default for LeastShardAllocation {
    /// At most 20 shards, and at most a tenth of all shards, per round.
    fn default() -> Self {
        Self {
            absolute_limit: 20,
            relative_limit: 0.1,
        }
    }
}

impl LeastShardAllocation {
    /// A strategy that moves at most `absolute_limit` shards, and at most
    /// `relative_limit` of all shards (but always at least one), per round.
    pub fn new(
        absolute_limit: usize,
        relative_limit: f64,
    ) -> Result<Self, AllocationSettingsError> {
        if absolute_limit == 0 {
            return Err(AllocationSettingsError::ZeroAbsoluteLimit);
        }
        if !(relative_limit > 0.0 && relative_limit <= 1.0) {
            return Err(AllocationSettingsError::RelativeLimitOutOfRange(
                relative_limit,
            ));
        }
        Ok(Self {
            absolute_limit,
            relative_limit,
        })
    }

    /// Most shards moved in one round.
    pub fn absolute_limit(&self) -> usize {
        self.absolute_limit
    }

    /// Most shards moved in one round, as a share of all shards.
    pub fn relative_limit(&self) -> f64 {
        self.relative_limit
    }

    /// The region a new shard goes to, or `None` when there is no region
    /// yet (the coordinator asks again once one registers). Among equally
    /// suitable regions, the first given.
    pub fn allocate<'e, R>(&self, regions: &'e [RegionEntry<'_, R>]) -> Option<&'e R> {
        let mut best: Option<&RegionEntry<'_, R>> = None;
        for entry in regions {
            if best.is_none_or(|b| entry.suitability(b).is_lt()) {
                best = Some(entry);
            }
        }
        best.map(|entry| &entry.region)
    }

    /// The shards to move in this round, oldest allocation first within
    /// each region; empty when the allocation is balanced or the gate is
    /// closed. The coordinator hands them off, then allocates each again
    /// with [`allocate`](Self::allocate).
    pub fn rebalance<R>(
        &self,
        regions: &[RegionEntry<'_, R>],
        gate: RebalanceGate,
    ) -> Vec<ShardId> {
        if gate.in_progress || gate.unreachable || gate.joining || regions.is_empty() {
            return Vec::new();
        }
        let version = AppVersion(regions[0].app_version);
        if regions.iter().any(|r| AppVersion(r.app_version) != version) {
            return Vec::new();
        }
        let mut sorted: Vec<&RegionEntry<'_, R>> = regions.iter().collect();
        sorted.sort_by(|a, b| a.suitability(b));
        let shards: usize = sorted.iter().map(|r| r.shards.len()).sum();
        if shards == 0 {
            return Vec::new();
        }
        let optimal = shards.div_ceil(sorted.len());
        let limit = self.limit(shards);
        let above = Self::above_optimal(&sorted, optimal, limit);
        if above.is_empty() {
            Self::two_below_optimal(&sorted, optimal, limit)
        } else {
            above
        }
    }

    /// At most this many shards move in one round.
    fn limit(&self, shards: usize) -> usize {
        let relative = (self.relative_limit * shards as f64) as usize;
        relative.min(self.absolute_limit).max(1)
    }

    /// Phase one: what each region has above the optimal count.
    fn above_optimal<R>(
        sorted: &[&RegionEntry<'_, R>],
        optimal: usize,
        limit: usize,
    ) -> Vec<ShardId> {
        sorted
            .iter()
            .flat_map(|r| &r.shards[..r.shards.len().saturating_sub(optimal)])
            .copied()
            .take(limit)
            .collect()
    }

    /// Phase two: the optimal count is rounded up, so no region may be
    /// above it while one is two below; one shard from each region at
    /// the optimal count, as many as the regions below it lack.
    fn two_below_optimal<R>(
        sorted: &[&RegionEntry<'_, R>],
        optimal: usize,
        limit: usize,
    ) -> Vec<ShardId> {
        let lacking: usize = sorted
            .iter()
            .map(|r| (optimal - 1).saturating_sub(r.shards.len()))
            .sum();
        sorted
            .iter()
            .filter(|r| r.shards.len() >= optimal)
            .map(|r| r.shards[0])
            .take(lacking.min(limit))
            .collect()
    }
}

#[cfg(test)]
#[path = "allocation_tests.rs"]
mod tests;
