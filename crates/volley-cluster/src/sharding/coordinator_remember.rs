//! The coordinator's side of remembered entities (Pekko's
//! `RememberEntitiesCoordinatorStore` and remember-shards): it records
//! each shard it allocates, and starts shards without a message:
//!
//! - a shard a region's store remembers and that runs nowhere starts in
//!   that region (its store has the ids); for one that runs elsewhere
//!   already, the region sends its ids to the shard's home
//!   (`HandOverRemembered`), which starts them: two nodes' copies of a
//!   shard's ids end up as their union;
//! - every recorded shard left without a home (after a hand-off, a
//!   region's removal, or at start) is allocated at once, to a region
//!   that is not shutting down;
//! - a handed-off shard's ids go with its `HostShard`, and its old home
//!   forgets them once it has started elsewhere.
//!
//! On a cluster the coordinator uses the store of the node it runs on;
//! with one file per node, what the regions report is what counts.

use volley::{ActorRef, Context};

use super::ShardCoordinator;
use crate::sharding::allocation::ShardId;
use crate::sharding::protocol::RegionControl;

impl ShardCoordinator {
    /// Reads the shards recorded as allocated, once at start.
    pub(super) fn read_recorded_shards(&mut self, ctx: &mut Context<Self>) {
        let Some(remember) = &self.remember else {
            return;
        };
        match remember.store.allocated_shards(&remember.entity_type) {
            Ok(shards) => self.recorded = shards,
            Err(error) => remember.failed(ctx.system(), None, "read shards", error),
        }
    }

    /// Records `shard` as allocated unless it is; false if the store
    /// failed (the shard is not allocated now; its asker asks again).
    pub(super) fn record_shard(&mut self, ctx: &mut Context<Self>, shard: ShardId) -> bool {
        let Some(remember) = &self.remember else {
            return true;
        };
        if self.recorded.contains(&shard) {
            return true;
        }
        match remember.store.add_shard(&remember.entity_type, shard) {
            Ok(()) => {
                self.recorded.insert(shard);
                true
            }
            Err(error) => {
                remember.failed(ctx.system(), Some(shard), "record a shard", error);
                false
            }
        }
    }

    /// `region` (after a restart of its node) remembers entities of
    /// `shards`: each that runs nowhere starts there; each placed
    /// elsewhere gets the region's ids at its home. One being moved, or
    /// whose home stopped and is not freed yet, waits in `reported`.
    pub(super) fn adopt_remembered(
        &mut self,
        region: &ActorRef<RegionControl>,
        shards: Vec<ShardId>,
    ) {
        if self.remember.is_none() {
            return;
        }
        for shard in shards {
            let home = self.state.home(shard).cloned();
            let starting = self.starting.get(&shard).map(|s| s.host.clone());
            let placed = home.or(starting);
            if placed.as_ref() == Some(region) {
                continue;
            }
            let home_stopped = placed.as_ref().is_some_and(|h| self.is_terminating(h));
            if self.rounds.contains_key(&shard) || home_stopped {
                self.recorded.insert(shard);
                self.reported.insert(shard, region.clone());
                continue;
            }
            if let Some(home) = placed {
                // Kept in `reported` too, for a home that turns out gone.
                self.reported.insert(shard, region.clone());
                region.tell(RegionControl::HandOverRemembered { shard, home });
                continue;
            }
            self.recorded.insert(shard);
            self.state.assign(shard, region);
            self.host_on(shard, region.clone(), Vec::new());
        }
    }

    /// Allocates every recorded shard that has no home, unless a new
    /// coordinator still waits for the regions' reports.
    pub(super) fn restore_shards(&mut self) {
        let waiting = self
            .on_cluster
            .as_ref()
            .is_some_and(|c| c.startup.is_some());
        if self.remember.is_none() || waiting {
            return;
        }
        let homeless: Vec<ShardId> = self
            .recorded
            .iter()
            .copied()
            .filter(|shard| {
                self.state.home(*shard).is_none()
                    && !self.starting.contains_key(shard)
                    && !self.rounds.contains_key(shard)
            })
            .collect();
        for shard in homeless {
            let reporter = self.reported.remove(&shard);
            if let Some(reporter) = reporter.filter(|r| self.state.is_registered(r)) {
                // Its store has the ids: the shard goes back there.
                self.state.assign(shard, &reporter);
                self.host_on(shard, reporter, Vec::new());
                continue;
            }
            let strategy = &self.settings.allocation;
            let Some(host) = self.state.allocate_to_staying(strategy, shard) else {
                return;
            };
            self.host_on(shard, host, Vec::new());
        }
    }

    /// `shard` started in `region`: the region that handed it off, if
    /// another, forgets its copy of the ids, and one that reported a copy
    /// meanwhile hands its ids over.
    pub(super) fn handed_over(&mut self, shard: ShardId, region: &ActorRef<RegionControl>) {
        if let Some((_, from)) = self.handed.remove(&shard) {
            if from != *region {
                from.tell(RegionControl::ForgetShard { shard });
            }
        }
        if let Some(reporter) = self.reported.remove(&shard) {
            if reporter != *region {
                let home = region.clone();
                reporter.tell(RegionControl::HandOverRemembered { shard, home });
            }
        }
    }
}
