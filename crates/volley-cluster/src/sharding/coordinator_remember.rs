//! The coordinator's side of remembered entities (Pekko's
//! `RememberEntitiesCoordinatorStore` and remember-shards): it records
//! each shard it allocates, and starts shards without a message:
//!
//! - a shard a region's store remembers and that runs nowhere starts in
//!   that region (its store has the ids); for one that runs elsewhere
//!   already, the region sends its ids to the shard's home
//!   (`HandOverRemembered`), which starts them: two nodes' copies of a
//!   shard's ids end up as their union. A new coordinator settles the
//!   reports only once every region has registered, so that a shard
//!   one region still hosts does not start in another;
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

    /// `region` remembers entities of `shards` (after a restart of its
    /// node, or a hand-off whose `ForgetShard` it has not had): noted in
    /// `reported`, and settled at once, or once a new coordinator has
    /// every region's report (so that a shard another region still hosts
    /// is not started a second time).
    pub(super) fn adopt_remembered(
        &mut self,
        region: &ActorRef<RegionControl>,
        shards: Vec<ShardId>,
    ) {
        if self.remember.is_none() {
            return;
        }
        let waiting = self
            .on_cluster
            .as_ref()
            .is_some_and(|c| c.startup.is_some());
        for shard in shards {
            self.recorded.insert(shard);
            let reporters = self.reported.entry(shard).or_default();
            if !reporters.contains(region) {
                reporters.push(region.clone());
            }
            if !waiting {
                self.settle_reported(shard);
            }
        }
    }

    /// The reported copies of `shard`'s ids: a shard that runs (or
    /// starts) somewhere gets them at its home (`HandOverRemembered`); a
    /// homeless one is placed in a reporting region by
    /// [`restore_shards`](Self::restore_shards). One being moved, or whose
    /// home stopped and is not freed yet, waits for either.
    pub(super) fn settle_reported(&mut self, shard: ShardId) {
        let home = self.state.home(shard).cloned();
        let placed = home.or_else(|| self.starting.get(&shard).map(|s| s.host.clone()));
        let Some(home) = placed else {
            return;
        };
        if self.rounds.contains_key(&shard) || self.is_terminating(&home) {
            return;
        }
        // Kept in `reported`: if the home turns out gone, the shard goes
        // back to a reporter once it is homeless.
        for reporter in self.reported.get(&shard).into_iter().flatten() {
            if *reporter != home {
                let home = home.clone();
                reporter.tell(RegionControl::HandOverRemembered { shard, home });
            }
        }
    }

    /// After a new coordinator's wait: every reported shard settled.
    pub(super) fn settle_all_reported(&mut self) {
        let shards: Vec<ShardId> = self.reported.keys().copied().collect();
        shards
            .into_iter()
            .for_each(|shard| self.settle_reported(shard));
    }

    /// Allocates every recorded shard that has no home, unless a new
    /// coordinator still waits for the regions' reports.
    pub(super) fn restore_shards(&mut self, ctx: &mut Context<Self>) {
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
            let mut reporters = self.reported.get(&shard).into_iter().flatten();
            let reporter = reporters.find(|&r| self.state.is_registered(r)).cloned();
            if let Some(reporter) = reporter {
                // Its store has the ids: the shard goes there; the other
                // reporters hand theirs over once it has started.
                self.state.assign(shard, &reporter);
                self.host_on(ctx, shard, reporter, Vec::new());
                continue;
            }
            let strategy = &self.settings.allocation;
            let Some(host) = self.state.allocate_to_staying(strategy, shard) else {
                return;
            };
            self.host_on(ctx, shard, host, Vec::new());
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
        for reporter in self.reported.remove(&shard).into_iter().flatten() {
            if reporter != *region {
                let home = region.clone();
                reporter.tell(RegionControl::HandOverRemembered { shard, home });
            }
        }
    }
}
