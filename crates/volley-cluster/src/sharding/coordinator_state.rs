//! The coordinator's map: the registered regions, and for each the shards
//! allocated to it, oldest first (the order the strategy moves them in).

use volley::ActorRef;

use super::allocation::{LeastShardAllocation, RebalanceGate, RegionEntry, ShardId};
use super::protocol::RegionControl;
use crate::member::MemberStatus;

/// One registered region and its shards, oldest allocation first.
pub(crate) struct RegionShards {
    pub(crate) region: ActorRef<RegionControl>,
    pub(crate) shards: Vec<ShardId>,
    /// Shutting down: it gets no new shard.
    pub(crate) leaving: bool,
    /// A proxy: it gets no shard at all, but is a region all the same
    /// (told of hand-offs, watched).
    pub(crate) proxy: bool,
    /// Its member's status and application version, when the coordinator
    /// runs on a cluster and knows them; otherwise taken as Up, of one
    /// version.
    pub(crate) member: Option<(MemberStatus, String)>,
}

/// Which region each shard is allocated to.
#[derive(Default)]
pub(crate) struct CoordinatorState {
    regions: Vec<RegionShards>,
}

impl CoordinatorState {
    /// Adds `region`, a proxy or a region that may host shards; false if
    /// it was registered already.
    pub(crate) fn register(&mut self, region: ActorRef<RegionControl>, proxy: bool) -> bool {
        if self.regions.iter().any(|r| r.region == region) {
            return false;
        }
        self.regions.push(RegionShards {
            region,
            shards: Vec::new(),
            leaving: false,
            proxy,
            member: None,
        });
        true
    }

    /// Sets each region's member from `member_of` (its status and
    /// application version; `None`: unknown).
    pub(crate) fn set_members(
        &mut self,
        member_of: impl Fn(&ActorRef<RegionControl>) -> Option<(MemberStatus, String)>,
    ) {
        for entry in &mut self.regions {
            entry.member = member_of(&entry.region);
        }
    }

    /// Whether a hosting region's member is known to be Down or removed.
    pub(crate) fn has_region_of_a_gone_member(&self) -> bool {
        self.regions.iter().any(|r| {
            !r.proxy
                && r.member
                    .as_ref()
                    .is_some_and(|(s, _)| *s >= MemberStatus::Down)
        })
    }

    /// Whether any registered region may host shards (not a proxy).
    pub(crate) fn has_hosts(&self) -> bool {
        self.regions.iter().any(|r| !r.proxy)
    }

    /// Removes `region`, returning the shards it had.
    pub(crate) fn remove(&mut self, region: &ActorRef<RegionControl>) -> Vec<ShardId> {
        match self.regions.iter().position(|r| r.region == *region) {
            Some(at) => self.regions.remove(at).shards,
            None => Vec::new(),
        }
    }

    /// Whether `region` is registered.
    pub(crate) fn is_registered(&self, region: &ActorRef<RegionControl>) -> bool {
        self.regions.iter().any(|r| r.region == *region)
    }

    /// Records that `shard` lives in `region`, a registered region (a
    /// region's report to a new coordinator).
    pub(crate) fn assign(&mut self, shard: ShardId, region: &ActorRef<RegionControl>) {
        if let Some(entry) = self.regions.iter_mut().find(|r| r.region == *region) {
            entry.shards.push(shard);
        }
    }

    /// Marks `region` as shutting down, returning its shards.
    pub(crate) fn leave(&mut self, region: &ActorRef<RegionControl>) -> Vec<ShardId> {
        match self.regions.iter_mut().find(|r| r.region == *region) {
            Some(entry) => {
                entry.leaving = true;
                entry.shards.clone()
            }
            None => Vec::new(),
        }
    }

    /// The regions, in registration order.
    pub(crate) fn regions(&self) -> impl Iterator<Item = &ActorRef<RegionControl>> {
        self.regions.iter().map(|r| &r.region)
    }

    /// The regions that may host shards (no proxies), in registration
    /// order.
    pub(crate) fn hosting_regions(&self) -> impl Iterator<Item = &ActorRef<RegionControl>> {
        self.regions.iter().filter(|r| !r.proxy).map(|r| &r.region)
    }

    /// The region `shard` is allocated to.
    pub(crate) fn home(&self, shard: ShardId) -> Option<&ActorRef<RegionControl>> {
        self.regions
            .iter()
            .find(|r| r.shards.contains(&shard))
            .map(|r| &r.region)
    }

    /// Allocates `shard` with `strategy`; `None` while no region is
    /// registered.
    pub(crate) fn allocate(
        &mut self,
        strategy: &LeastShardAllocation,
        shard: ShardId,
    ) -> Option<ActorRef<RegionControl>> {
        let chosen = *strategy.allocate(&self.entries())?;
        let region = &mut self.regions[chosen];
        region.shards.push(shard);
        Some(region.region.clone())
    }

    /// Allocates `shard` with `strategy` to a region that is not shutting
    /// down; `None` if there is none (a shard restored without a message
    /// must not go to a region that is about to hand it off again).
    pub(crate) fn allocate_to_staying(
        &mut self,
        strategy: &LeastShardAllocation,
        shard: ShardId,
    ) -> Option<ActorRef<RegionControl>> {
        let chosen = *strategy.allocate(&self.entries())?;
        let region = &mut self.regions[chosen];
        if region.leaving {
            return None;
        }
        region.shards.push(shard);
        Some(region.region.clone())
    }

    /// Forgets where `shard` was.
    pub(crate) fn deallocate(&mut self, shard: ShardId) {
        for region in &mut self.regions {
            region.shards.retain(|s| *s != shard);
        }
    }

    /// The shards the strategy would move now.
    pub(crate) fn to_rebalance(
        &self,
        strategy: &LeastShardAllocation,
        gate: RebalanceGate,
    ) -> Vec<ShardId> {
        strategy.rebalance(&self.entries(), gate)
    }

    /// The regions as the strategy sees them, by index, proxies left out:
    /// with their member's status and application version (Up and one
    /// version when unknown), and as Leaving when shutting down, so that
    /// such a region gets no new shard.
    fn entries(&self) -> Vec<RegionEntry<'_, usize>> {
        self.regions
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.proxy)
            .map(|(at, r)| {
                let (status, app_version) = match &r.member {
                    Some((status, version)) => (*status, version.as_str()),
                    None => (MemberStatus::Up, ""),
                };
                RegionEntry {
                    region: at,
                    status: if r.leaving {
                        MemberStatus::Leaving
                    } else {
                        status
                    },
                    app_version,
                    shards: &r.shards,
                }
            })
            .collect()
    }
}
