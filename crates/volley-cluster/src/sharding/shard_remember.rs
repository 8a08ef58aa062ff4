//! The shard's side of remembered entities (Pekko's `Shard` with a
//! `RememberEntitiesShardStore`): what it records in the node's store,
//! and when it starts an entity without a message.
//!
//! - An entity is recorded before it starts (its first message waits in
//!   the handler for the write), so a running entity is always
//!   remembered; one that passivates is forgotten once it has stopped.
//! - When the shard starts (first message, a hand-off to this node, a
//!   restart after a crash or of the cluster) it starts every entity the
//!   store remembers for it.
//! - An entity that stops without passivating (it stopped itself, or
//!   failed) stays remembered and starts again after
//!   `entity_restart_backoff`, or on its next message.
//! - A failed read or write stops the shard, with its entities (Pekko's
//!   policy): its region starts it again after `shard_failure_backoff`,
//!   and it reads the store again. What waited in the shard for stopping
//!   entities is dead-lettered.
//!
//! Without a store every function here does nothing and writes nothing.

use std::sync::Arc;

use volley::{Actor, Context, DeadLetterReason};

use super::{dead_letter, restart_timer, Entity, EntityKey, Shard, ShardMsg};
use crate::sharding::store::{StoreError, StoreUpdate};

impl<A: Actor> Shard<A> {
    /// Starts the entities the store remembers for this shard.
    pub(super) fn start_remembered(&mut self, ctx: &mut Context<Self>) {
        let Some(remember) = &self.remember else {
            return;
        };
        let ids = match remember.store.entities(&remember.entity_type, self.id) {
            Ok(ids) => ids,
            Err(error) => return self.store_failed(ctx, "read entities", error),
        };
        self.start_ids(ctx, ids);
    }

    /// Starts the remembered `ids` that do not run.
    pub(super) fn start_ids(
        &mut self,
        ctx: &mut Context<Self>,
        ids: impl IntoIterator<Item = String>,
    ) {
        if self.handing_off.is_some() || self.failed {
            return;
        }
        for id in ids {
            let id = Arc::from(id);
            match self.entities.get(&*id) {
                None => {}
                Some(Entity::Remembered) => {
                    ctx.cancel_timer(restart_timer(&id));
                }
                Some(_) => continue,
            }
            self.start(ctx, &id);
        }
    }

    /// Records that entity `id` starts; false if the store failed (the
    /// shard then stops).
    pub(super) fn record_start(&mut self, ctx: &mut Context<Self>, id: &Arc<str>) -> bool {
        let Some(remember) = &self.remember else {
            return true;
        };
        let update = StoreUpdate::started([&**id]);
        match remember
            .store
            .update(&remember.entity_type, self.id, &update)
        {
            Ok(()) => true,
            Err(error) => {
                self.store_failed(ctx, "record a start", error);
                false
            }
        }
    }

    /// Records that entity `id` passivated: it does not start again.
    pub(super) fn record_stop(&mut self, ctx: &mut Context<Self>, id: &Arc<str>) {
        let Some(remember) = &self.remember else {
            return;
        };
        let update = StoreUpdate::stopped([&**id]);
        if let Err(error) = remember
            .store
            .update(&remember.entity_type, self.id, &update)
        {
            self.store_failed(ctx, "record a stop", error);
        }
    }

    /// Entity `id` stopped without passivating: remembered, it starts
    /// again after the backoff; otherwise it is gone.
    pub(super) fn restart_later(&mut self, ctx: &mut Context<Self>, id: Arc<str>) {
        if self.remember.is_none() || self.failed {
            return;
        }
        let backoff = self.settings.entity_restart_backoff;
        self.entities
            .insert(EntityKey::new(&id), Entity::Remembered);
        ctx.schedule_once(restart_timer(&id), backoff, ShardMsg::RestartEntity(id));
    }

    /// The backoff of entity `id` is over.
    pub(super) fn restart_entity(&mut self, ctx: &mut Context<Self>, id: &Arc<str>) {
        let waiting = matches!(self.entities.get(&**id), Some(Entity::Remembered));
        if waiting && self.handing_off.is_none() && !self.failed {
            self.start(ctx, id);
        }
    }

    /// At the start of a hand-off: the ids the next home starts (those
    /// running, waiting to restart, or passivating with messages waiting,
    /// which would start them again). Those waiting to restart are
    /// dropped here: nothing of them runs.
    pub(super) fn take_remembered(&mut self, ctx: &mut Context<Self>) {
        if self.remember.is_none() {
            return;
        }
        let mut remembered = Vec::new();
        self.entities.retain(|id, entity| {
            let (keep, remember) = match entity {
                Entity::Running(_) => (true, true),
                Entity::Stopping(waiting) => (true, !waiting.is_empty()),
                Entity::Remembered => {
                    ctx.cancel_timer(restart_timer(id.as_str()));
                    (false, true)
                }
            };
            if remember {
                remembered.push(id.as_str().to_string());
            }
            keep
        });
        remembered.sort_unstable();
        self.remembered = remembered;
    }

    /// The store failed: reported, and the shard stops with its entities.
    pub(super) fn store_failed(
        &mut self,
        ctx: &mut Context<Self>,
        operation: &'static str,
        error: StoreError,
    ) {
        if let Some(remember) = &self.remember {
            remember.failed(ctx.system(), Some(self.id), operation, error);
        }
        self.failed = true;
        for entity in self.entities.values_mut() {
            if let Entity::Stopping(waiting) = entity {
                for _ in waiting.drain(..) {
                    dead_letter::<A>(ctx, DeadLetterReason::RecipientTerminated);
                }
            }
        }
        self.buffered = 0;
        ctx.stop_self();
    }
}
