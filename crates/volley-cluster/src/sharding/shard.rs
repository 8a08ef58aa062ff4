//! A shard: the actor that owns the entities of one shard on one region.
//! It starts an entity on its first message, passivates idle or least
//! recently used ones, and hands every entity off when its shard moves.
//!
//! What it guarantees, so that nothing is lost silently:
//! - a message for an entity that is stopping (passivated) waits in the
//!   shard and starts the entity again once it has stopped, in order;
//! - an entity is stopped with `graceful_stop`, behind what it was sent
//!   before, so passivation loses none of its queued messages;
//! - on hand-off, what waits for stopping entities goes back to the
//!   asker with the answer, to follow the shard to its new home;
//! - past `buffer_limit`, a message is a dead letter (counted).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, Context, DeadLetterReason, HandleResult, Props, ReplyTo};

use super::allocation::ShardId;
use super::entity_name::entity_name;
use super::passivation::{ActiveEntities, PassivationSettings};

/// Builds the actor of an entity from its id.
pub type EntityFactory<A> = Arc<dyn Fn(&str) -> Props<A> + Send + Sync>;

/// What a shard takes.
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
}

/// A shard's answer to [`ShardMsg::HandOff`]: its entities have stopped.
#[derive(Debug)]
pub struct HandedOff<M> {
    /// The shard.
    pub shard: ShardId,
    /// Messages that waited for entities that were stopping, in the
    /// order they came, per entity: the region sends them on to the
    /// shard's new home.
    pub undelivered: Vec<(Arc<str>, M)>,
}

enum Entity<M: Send + 'static> {
    Running(ActorRef<M>),
    Stopping(VecDeque<M>),
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
}

impl Default for ShardSettings {
    fn default() -> Self {
        Self {
            passivation: PassivationSettings::default(),
            passivation_check_interval: Duration::from_secs(1),
            buffer_limit: 10_000,
        }
    }
}

/// The shard actor for entities of type `A`.
pub struct Shard<A: Actor> {
    id: ShardId,
    factory: EntityFactory<A>,
    settings: ShardSettings,
    entities: HashMap<Arc<str>, Entity<A::Msg>>,
    active: ActiveEntities<Arc<str>>,
    buffered: usize,
    handing_off: Option<ReplyTo<HandedOff<A::Msg>>>,
    undelivered: Vec<(Arc<str>, A::Msg)>,
}

const PASSIVATION_TIMER: &str = "passivation";

impl<A: Actor> Shard<A> {
    /// The props of shard `id`, whose entities `factory` builds.
    pub fn props(id: ShardId, factory: EntityFactory<A>, settings: ShardSettings) -> Props<Self> {
        Props::new(move || Shard {
            id,
            factory: factory.clone(),
            settings,
            entities: HashMap::new(),
            active: ActiveEntities::default(),
            buffered: 0,
            handing_off: None,
            undelivered: Vec::new(),
        })
    }

    fn deliver(&mut self, ctx: &mut Context<Self>, entity_id: Arc<str>, msg: A::Msg) {
        if self.handing_off.is_some() {
            return dead_letter::<A>(ctx, DeadLetterReason::RecipientTerminated);
        }
        match self.entities.get_mut(&entity_id) {
            Some(Entity::Running(entity)) => entity.tell(msg),
            Some(Entity::Stopping(waiting)) => {
                if self.buffered >= self.settings.buffer_limit {
                    return dead_letter::<A>(ctx, DeadLetterReason::BufferOverflow);
                }
                waiting.push_back(msg);
                self.buffered += 1;
                return;
            }
            None => match self.start(ctx, &entity_id) {
                Some(entity) => entity.tell(msg),
                None => return dead_letter::<A>(ctx, DeadLetterReason::Undeliverable),
            },
        }
        if self.settings.passivation.is_enabled() {
            self.active.touch(&entity_id, Instant::now());
        }
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
            .insert(id.clone(), Entity::Running(entity.clone()));
        Some(entity)
    }

    /// Stops entity `id` behind what it was sent; what comes meanwhile
    /// waits here.
    fn passivate(&mut self, id: &Arc<str>) {
        if let Some(slot) = self.entities.get_mut(id) {
            if let Entity::Running(entity) = slot {
                entity.graceful_stop();
                *slot = Entity::Stopping(VecDeque::new());
            }
        }
    }

    fn passivate_idle(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        for id in self.active.to_passivate(now, &self.settings.passivation) {
            self.passivate(&id);
        }
        self.arm_passivation(ctx);
    }

    fn arm_passivation(&mut self, ctx: &mut Context<Self>) {
        if self.settings.passivation.is_enabled() {
            let every = self.settings.passivation_check_interval;
            ctx.schedule_once(PASSIVATION_TIMER, every, ShardMsg::PassivationTick);
        }
    }

    /// Entity `id` stopped: what waited for it starts it again, or, during
    /// a hand-off, goes with the answer.
    fn entity_stopped(&mut self, ctx: &mut Context<Self>, id: Arc<str>) {
        self.active.remove(&id);
        let waiting = match self.entities.remove(&id) {
            Some(Entity::Stopping(waiting)) => waiting,
            _ => VecDeque::new(),
        };
        self.buffered -= waiting.len();
        if self.handing_off.is_some() {
            self.undelivered
                .extend(waiting.into_iter().map(|msg| (id.clone(), msg)));
            return self.finish_hand_off(ctx);
        }
        for msg in waiting {
            self.deliver(ctx, id.clone(), msg);
        }
    }

    fn hand_off(&mut self, ctx: &mut Context<Self>, reply: ReplyTo<HandedOff<A::Msg>>) {
        self.handing_off = Some(reply);
        ctx.cancel_timer(PASSIVATION_TIMER);
        let ids: Vec<Arc<str>> = self.entities.keys().cloned().collect();
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
            });
            ctx.stop_self();
        }
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
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Self::Msg) -> HandleResult {
        match msg {
            ShardMsg::Deliver { entity_id, msg } => self.deliver(ctx, entity_id, msg),
            ShardMsg::Passivate(id) => self.passivate(&id),
            ShardMsg::HandOff(reply) => self.hand_off(ctx, reply),
            ShardMsg::EntityStopped(id) => self.entity_stopped(ctx, id),
            ShardMsg::PassivationTick => self.passivate_idle(ctx),
        }
        Ok(())
    }
}
