//! A shard: the actor that owns the entities of one shard on one region.
//! It starts an entity on its first message, passivates idle or least
//! recently used ones, and hands every entity off when its shard moves.
//!
//! What it guarantees, so that nothing is lost silently:
//! - a message for an entity that is stopping (passivated) waits in the
//!   shard and starts the entity again once it has stopped, in order;
//! - an entity is stopped with `graceful_stop`, behind what it was sent
//!   before, so passivation loses none of its queued messages;
//! - on hand-off, what waits for stopping entities, and what comes
//!   meanwhile for entities already stopped (or never started), goes
//!   back to the asker with the answer, to follow the shard to its new
//!   home;
//! - past `buffer_limit`, a message is a dead letter (counted).
//!
//! With remembered entities on, it also records in the node's store each
//! entity it starts and each that passivates, starts the remembered ones
//! when it starts, and starts again an entity that stopped without
//! passivating (`shard_remember.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use foldhash::fast::RandomState as FastHash;
use volley::{Actor, ActorRef, Context, DeadLetterReason, HandleResult, Props, ReplyTo};

use super::allocation::ShardId;
use super::entity_key::EntityKey;
use super::entity_name::entity_name;
use super::passivation::{ActiveEntities, PassivationSettings};
use super::region_state::ShardState;
use super::remembering::Remembering;

#[path = "shard_remember.rs"]
mod remember;

/// Builds the actor of an entity from its id.
pub type EntityFactory<A> = Arc<dyn Fn(&str) -> Props<A> + Send + Sync>;

/// What a shard takes.
#[derive(Debug)]
pub enum ShardMsg<M: Send + 'static> {
    /// A message for entity `entity_id`, started on demand.
    Deliver {
        /// The entity.
        entity_id: Arc<str>,
        /// The message.
        msg: M,
    },
    /// Stop the entity, keeping what is sent to it meanwhile (Akka's
    /// `Passivate`, which an entity sends about itself).
    Passivate(Arc<str>),
    /// Stop every entity, answer once all have stopped, and stop.
    HandOff(ReplyTo<HandedOff<M>>),
    /// From the shard to itself: an entity stopped.
    EntityStopped(Arc<str>),
    /// From the shard to itself: time to look for entities to passivate.
    PassivationTick,
    /// From the shard to itself: start again a remembered entity that
    /// stopped without passivating, after `entity_restart_backoff`.
    RestartEntity(Arc<str>),
    /// From the region: start these remembered ids, recorded already (a
    /// node that came back handed them over).
    StartRemembered(Vec<String>),
    /// From the region: the shard's entities, for
    /// `Sharding::shard_region_state`.
    GetState(tokio::sync::oneshot::Sender<ShardState>),
}

/// A shard's answer to [`ShardMsg::HandOff`]: its entities have stopped.
#[derive(Debug)]
pub struct HandedOff<M> {
    /// The shard.
    pub shard: ShardId,
    /// Messages that waited for entities that were stopping, and those
    /// that came during the hand-off for entities already stopped, in
    /// the order they came, per entity: the region sends them on to the
    /// shard's new home.
    pub undelivered: Vec<(Arc<str>, M)>,
    /// With remembered entities: the ids to start again at the shard's
    /// next home (those running, or waiting to restart, at the hand-off).
    /// Empty otherwise.
    pub remembered: Vec<String>,
}

enum Entity<M: Send + 'static> {
    Running(ActorRef<M>),
    Stopping(VecDeque<M>),
    /// Remembered, not running: it stopped without passivating and starts
    /// again after `entity_restart_backoff`, or on its next message.
    Remembered,
}

/// How a shard behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSettings {
    /// When to passivate entities.
    pub passivation: PassivationSettings,
    /// How often to look for entities to passivate.
    pub passivation_check_interval: Duration,
    /// Most messages waiting, in all, for entities that are stopping.
    pub buffer_limit: usize,
    /// With remembered entities: how long after an entity stopped without
    /// passivating (it stopped itself, or failed) it is started again
    /// (Pekko's `entity-restart-backoff`).
    pub entity_restart_backoff: Duration,
}

impl Default for ShardSettings {
    fn default() -> Self {
        Self {
            passivation: PassivationSettings::default(),
            passivation_check_interval: Duration::from_secs(1),
            buffer_limit: 10_000,
            entity_restart_backoff: Duration::from_secs(10),
        }
    }
}

/// The shard actor for entities of type `A`.
pub struct Shard<A: Actor> {
    id: ShardId,
    factory: EntityFactory<A>,
    settings: ShardSettings,
    /// Looked up for every message: a seeded fast hash, and the id in
    /// the slot ([`EntityKey`]).
    entities: HashMap<EntityKey, Entity<A::Msg>, FastHash>,
    active: ActiveEntities<Arc<str>>,
    buffered: usize,
    handing_off: Option<ReplyTo<HandedOff<A::Msg>>>,
    undelivered: Vec<(Arc<str>, A::Msg)>,
    /// The node's store, when the entity type remembers its entities.
    remember: Option<Remembering>,
    /// The ids to hand to the next home, taken when the hand-off begins.
    remembered: Vec<String>,
    /// The store failed: the shard is stopping and takes nothing more.
    failed: bool,
}

const PASSIVATION_TIMER: &str = "passivation";

impl<A: Actor> Shard<A> {
    /// The props of shard `id`, whose entities `factory` builds.
    pub fn props(id: ShardId, factory: EntityFactory<A>, settings: ShardSettings) -> Props<Self> {
        Self::props_remembering(id, factory, settings, None)
    }

    /// [`props`](Self::props), with the entity type's store when it
    /// remembers its entities.
    pub(crate) fn props_remembering(
        id: ShardId,
        factory: EntityFactory<A>,
        settings: ShardSettings,
        remember: Option<Remembering>,
    ) -> Props<Self> {
        Props::new(move || Shard {
            id,
            factory: factory.clone(),
            settings,
            entities: HashMap::default(),
            active: ActiveEntities::default(),
            buffered: 0,
            handing_off: None,
            undelivered: Vec::new(),
            remember: remember.clone(),
            remembered: Vec::new(),
            failed: false,
        })
    }

    fn deliver(&mut self, ctx: &mut Context<Self>, entity_id: Arc<str>, msg: A::Msg) {
        if self.failed {
            return dead_letter::<A>(ctx, DeadLetterReason::RecipientTerminated);
        }
        if self.handing_off.is_some() && !self.entities.contains_key(&*entity_id) {
            return self.keep_for_next_home(ctx, entity_id, msg);
        }
        match self.entities.get_mut(&*entity_id) {
            Some(Entity::Running(entity)) => entity.tell(msg),
            Some(Entity::Stopping(waiting)) => {
                if self.buffered >= self.settings.buffer_limit {
                    return dead_letter::<A>(ctx, DeadLetterReason::BufferOverflow);
                }
                waiting.push_back(msg);
                self.buffered += 1;
                return;
            }
            Some(Entity::Remembered) => {
                ctx.cancel_timer(restart_timer(&entity_id));
                match self.start(ctx, &entity_id) {
                    Some(entity) => entity.tell(msg),
                    None => return dead_letter::<A>(ctx, DeadLetterReason::Undeliverable),
                }
            }
            None => {
                // Recorded before it runs: a running entity is always
                // remembered.
                if !self.record_start(ctx, &entity_id) {
                    return dead_letter::<A>(ctx, DeadLetterReason::Undeliverable);
                }
                match self.start(ctx, &entity_id) {
                    Some(entity) => entity.tell(msg),
                    None => return dead_letter::<A>(ctx, DeadLetterReason::Undeliverable),
                }
            }
        }
        if self.settings.passivation.is_enabled() {
            self.active.touch(&entity_id, Instant::now());
        }
    }

    /// During a hand-off, a message for an entity that has stopped (or
    /// never ran) goes with the answer to the shard's next home, in the
    /// order it came. (One for a stopping entity waits for it as usual,
    /// and follows the same way.) Both count against `buffer_limit`.
    fn keep_for_next_home(&mut self, ctx: &mut Context<Self>, id: Arc<str>, msg: A::Msg) {
        if self.buffered + self.undelivered.len() >= self.settings.buffer_limit {
            return dead_letter::<A>(ctx, DeadLetterReason::BufferOverflow);
        }
        self.undelivered.push((id, msg));
    }

    /// Starts entity `id` as a child named after it, watched.
    fn start(&mut self, ctx: &mut Context<Self>, id: &Arc<str>) -> Option<ActorRef<A::Msg>> {
        let Some(name) = entity_name(id) else {
            tracing::warn!(entity_id = %id, "an entity id too long for an actor name");
            return None;
        };
        let entity = match ctx.spawn(&name, (self.factory)(id)) {
            Ok(entity) => entity,
            Err(error) => {
                tracing::warn!(entity_id = %id, %error, "an entity could not be started");
                return None;
            }
        };
        ctx.watch_with(&entity, ShardMsg::EntityStopped(id.clone()));
        self.entities
            .insert(EntityKey::new(id), Entity::Running(entity.clone()));
        Some(entity)
    }

    /// Stops entity `id` behind what it was sent; what comes meanwhile
    /// waits here.
    fn passivate(&mut self, id: &Arc<str>) {
        if let Some(slot) = self.entities.get_mut(&**id) {
            if let Entity::Running(entity) = slot {
                entity.graceful_stop();
                *slot = Entity::Stopping(VecDeque::new());
            }
        }
    }

    /// An entity asked to stop for good (Akka's `Passivate`): it stops
    /// behind what it was sent; one waiting to restart is forgotten.
    fn passivate_asked(&mut self, ctx: &mut Context<Self>, id: &Arc<str>) {
        if matches!(self.entities.get(&**id), Some(Entity::Remembered)) {
            self.entities.remove(&**id);
            ctx.cancel_timer(restart_timer(id));
            return self.record_stop(ctx, id);
        }
        self.passivate(id);
    }

    fn passivate_idle(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        for id in self.active.to_passivate(now, &self.settings.passivation) {
            self.passivate(&id);
        }
        self.arm_passivation(ctx);
    }

    fn arm_passivation(&mut self, ctx: &mut Context<Self>) {
        if self.remember.is_some() {
            return; // it would stop what the store says should run
        }
        if self.settings.passivation.is_enabled() {
            let every = self.settings.passivation_check_interval;
            ctx.schedule_once(PASSIVATION_TIMER, every, ShardMsg::PassivationTick);
        }
    }

    /// Entity `id` stopped: what waited for it starts it again, or, during
    /// a hand-off, goes with the answer.
    fn entity_stopped(&mut self, ctx: &mut Context<Self>, id: Arc<str>) {
        self.active.remove(&id);
        let (waiting, passivated) = match self.entities.remove(&*id) {
            Some(Entity::Stopping(waiting)) => (waiting, true),
            Some(Entity::Remembered) => {
                // Not this entity's stop: a stale one.
                self.entities
                    .insert(EntityKey::new(&id), Entity::Remembered);
                return;
            }
            _ => (VecDeque::new(), false),
        };
        self.buffered -= waiting.len();
        if self.handing_off.is_some() {
            self.undelivered
                .extend(waiting.into_iter().map(|msg| (id.clone(), msg)));
            return self.finish_hand_off(ctx);
        }
        if !passivated {
            return self.restart_later(ctx, id);
        }
        if waiting.is_empty() {
            return self.record_stop(ctx, &id);
        }
        if self.remember.is_some() {
            // Still remembered: it starts again without a write.
            self.entities
                .insert(EntityKey::new(&id), Entity::Remembered);
        }
        for msg in waiting {
            self.deliver(ctx, id.clone(), msg);
        }
    }

    fn hand_off(&mut self, ctx: &mut Context<Self>, reply: ReplyTo<HandedOff<A::Msg>>) {
        self.handing_off = Some(reply);
        ctx.cancel_timer(PASSIVATION_TIMER);
        self.take_remembered(ctx);
        let ids: Vec<Arc<str>> = self.entities.keys().map(EntityKey::to_shared).collect();
        for id in ids {
            self.passivate(&id);
        }
        self.finish_hand_off(ctx);
    }

    /// Once every entity has stopped: answers the hand-off and stops.
    fn finish_hand_off(&mut self, ctx: &mut Context<Self>) {
        if !self.entities.is_empty() {
            return;
        }
        if let Some(reply) = self.handing_off.take() {
            reply.tell(HandedOff {
                shard: self.id,
                undelivered: std::mem::take(&mut self.undelivered),
                remembered: std::mem::take(&mut self.remembered),
            });
            ctx.stop_self();
        }
    }
}

fn restart_timer(id: &str) -> String {
    format!("restart-{id}")
}

/// Asks the shard of the entity whose context this is to passivate it
/// (Akka's `Passivate`, sent to the entity's parent): the entity stops
/// behind what it was sent, and, with remembered entities, is forgotten,
/// so that it does not start again with its shard. `entity_id` is its
/// id. False if the actor is not a sharded entity of this message type.
pub fn passivate<A: Actor>(ctx: &Context<A>, entity_id: &str) -> bool {
    let shard = ctx.parent().and_then(|p| p.downcast::<ShardMsg<A::Msg>>());
    match shard {
        Some(shard) => {
            shard.tell(ShardMsg::Passivate(entity_id.into()));
            true
        }
        None => false,
    }
}

fn dead_letter<A: Actor>(ctx: &Context<Shard<A>>, reason: DeadLetterReason) {
    let message_type = std::any::type_name::<A::Msg>();
    ctx.system().dead_letter(ctx.path(), message_type, reason);
}

impl<A: Actor> Actor for Shard<A> {
    type Msg = ShardMsg<A::Msg>;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.arm_passivation(ctx);
        self.start_remembered(ctx);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Self::Msg) -> HandleResult {
        match msg {
            ShardMsg::Deliver { entity_id, msg } => self.deliver(ctx, entity_id, msg),
            ShardMsg::Passivate(id) => self.passivate_asked(ctx, &id),
            ShardMsg::HandOff(reply) => self.hand_off(ctx, reply),
            ShardMsg::EntityStopped(id) => self.entity_stopped(ctx, id),
            ShardMsg::PassivationTick => self.passivate_idle(ctx),
            ShardMsg::RestartEntity(id) => self.restart_entity(ctx, &id),
            ShardMsg::StartRemembered(ids) => self.start_ids(ctx, ids),
            ShardMsg::GetState(reply) => {
                let entity_ids = self.entities.keys().map(|k| k.as_str().to_owned());
                let state = ShardState {
                    shard: self.id,
                    entity_ids: entity_ids.collect(),
                };
                let _asker_gone = reply.send(state);
            }
        }
        Ok(())
    }
}
