//! The region's side of remembered entities: which shards the node's
//! store remembers (named in the registration, so that a restarted node
//! starts them without a message), the ids a hand-off brings, and a
//! shard stopped by a failure of the store, started again after
//! `shard_failure_backoff`.
//!
//! The ids of a shard move with it: the old home sends them in
//! `ShardStopped`, the coordinator passes them on in `HostShard`, the new
//! home records them before it starts the shard, and only once the shard
//! has started there does the coordinator tell the old home
//! `ForgetShard`. So the ids are in at least one node's store at every
//! moment, and a hand-off that no region can take (every member leaves)
//! leaves them where they were.
//!
//! A node that comes back with ids of a shard that started elsewhere
//! meanwhile (it crashed, or stopped before its `ForgetShard`) sends them
//! to the shard's home (`HandOverRemembered`, then `AddRemembered`),
//! which records and starts them and answers `ForgetShard`; only then
//! does it forget its copy (a home that is gone never answers, and the
//! coordinator places the shard back with the copy once it is freed).

use volley::{Actor, ActorRef, Context};

use super::{Home, RegionMsg, ShardRegion};
use crate::sharding::allocation::ShardId;
use crate::sharding::protocol::RegionControl;
use crate::sharding::shard::ShardMsg;
use crate::sharding::store::StoreUpdate;

fn restart_timer(shard: ShardId) -> String {
    format!("restart-shard-{}", shard.0)
}

impl<A: Actor> ShardRegion<A> {
    /// Reads, once at start, the shards the store remembers entities of.
    pub(super) fn read_remembered_shards(&mut self, ctx: &mut Context<Self>) {
        let Some(remember) = &self.remember else {
            return;
        };
        match remember.store.shards_with_entities(&remember.entity_type) {
            Ok(shards) => self.remembered = shards,
            Err(error) => remember.failed(ctx.system(), None, "read shards", error),
        }
    }

    /// Records the ids a hand-off brought for `shard`, before it starts
    /// here; false if the store failed (the shard is not started, and the
    /// ids stay in the old home's store).
    pub(super) fn record_handed(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        ids: Vec<String>,
    ) -> bool {
        let Some(remember) = &self.remember else {
            return true;
        };
        if ids.is_empty() {
            return true;
        }
        let update = StoreUpdate {
            started: ids,
            stopped: Vec::new(),
        };
        match remember.store.update(&remember.entity_type, shard, &update) {
            Ok(()) => true,
            Err(error) => {
                remember.failed(ctx.system(), Some(shard), "record a hand-over", error);
                false
            }
        }
    }

    /// The shard runs elsewhere with its ids: forget this store's copy,
    /// unless it is hosted here again.
    pub(super) fn forget_shard(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        let Some(remember) = &self.remember else {
            return;
        };
        if self.hosted.contains_key(&shard) || self.stopping.contains_key(&shard) {
            return;
        }
        self.remembered.remove(&shard);
        if let Err(error) = remember.store.remove_shard(&remember.entity_type, shard) {
            remember.failed(ctx.system(), Some(shard), "forget a shard", error);
        }
    }

    /// `shard` runs at `home`: send it this store's ids of the shard
    /// (unless the shard is hosted here again); its answer makes this
    /// region forget them.
    pub(super) fn hand_over_remembered(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        home: &ActorRef<RegionControl>,
    ) {
        let Some(remember) = &self.remember else {
            return;
        };
        if self.hosted.contains_key(&shard) || self.stopping.contains_key(&shard) {
            return;
        }
        let ids = match remember.store.entities(&remember.entity_type, shard) {
            Ok(ids) => ids,
            Err(error) => {
                return remember.failed(ctx.system(), Some(shard), "read entities", error)
            }
        };
        if ids.is_empty() {
            return self.forget_shard(ctx, shard);
        }
        let ids = ids.into_iter().collect();
        let from = self.control();
        home.tell(RegionControl::AddRemembered { shard, ids, from });
    }

    /// Another region's ids of `shard`: recorded, started by the shard if
    /// it runs here (else when it starts here), and `from` may forget
    /// its copy.
    pub(super) fn add_remembered(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        ids: Vec<String>,
        from: &ActorRef<RegionControl>,
    ) {
        if !self.record_handed(ctx, shard, ids.clone()) {
            return;
        }
        match self.hosted.get(&shard) {
            Some(local) => local.tell(ShardMsg::StartRemembered(ids)),
            // Not here (any more): in this store now, so reported.
            None => drop(self.remembered.insert(shard)),
        }
        from.tell(RegionControl::ForgetShard { shard });
    }

    /// A hosted shard stopped outside a hand-off (its store failed): with
    /// remembered entities it starts again after the backoff, since no
    /// message may come to start it.
    pub(super) fn restart_shard_later(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        if self.remember.is_some() {
            let backoff = self.settings.shard_failure_backoff;
            ctx.schedule_once(
                restart_timer(shard),
                backoff,
                RegionMsg::RestartShard(shard),
            );
        }
    }

    pub(super) fn restart_shard(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        let here = matches!(self.homes.get(&shard), Some(Home::Here));
        if here && !self.hosted.contains_key(&shard) && self.shutting_down.is_none() {
            self.local_shard(ctx, shard);
        }
    }
}
