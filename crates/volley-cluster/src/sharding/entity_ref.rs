//! A reference to one sharded entity (Akka Typed's `EntityRef`): it sends
//! through the local region, which finds the entity wherever it lives.
//! The entity's shard is computed once, when the reference is made, so
//! a bad id is an error then and sending is as cheap as a region tell.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use volley::{ActorRef, AskError, ReplyTo};

use super::allocation::ShardId;
use super::region::RegionMsg;

/// An entity type: its name, unique on the system, and the message type
/// its entities take.
pub struct EntityTypeKey<M> {
    name: Arc<str>,
    message: PhantomData<fn() -> M>,
}

impl<M> EntityTypeKey<M> {
    /// The key of entity type `name`.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            message: PhantomData,
        }
    }

    /// The entity type's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<M> Clone for EntityTypeKey<M> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            message: PhantomData,
        }
    }
}

/// One entity of a sharded type, by id.
pub struct EntityRef<M: Send + 'static> {
    region: ActorRef<RegionMsg<M>>,
    shard: ShardId,
    entity_id: Arc<str>,
}

impl<M: Send + 'static> Clone for EntityRef<M> {
    fn clone(&self) -> Self {
        Self {
            region: self.region.clone(),
            shard: self.shard,
            entity_id: self.entity_id.clone(),
        }
    }
}

impl<M: Send + 'static> EntityRef<M> {
    pub(crate) fn new(region: ActorRef<RegionMsg<M>>, shard: ShardId, entity_id: Arc<str>) -> Self {
        Self {
            region,
            shard,
            entity_id,
        }
    }

    /// The entity's id.
    pub fn entity_id(&self) -> &str {
        &self.entity_id
    }

    /// The entity's shard.
    pub fn shard(&self) -> ShardId {
        self.shard
    }

    fn envelope(&self, msg: M) -> RegionMsg<M> {
        RegionMsg::Deliver {
            shard: self.shard,
            entity_id: self.entity_id.clone(),
            msg,
        }
    }

    /// Sends `msg` to the entity, starting it if needed. Messages from one
    /// sender arrive in the order they were sent.
    pub fn tell(&self, msg: M) {
        self.region.tell(self.envelope(msg));
    }

    /// Request and reply, from async code, as [`ActorRef::ask`]: `make`
    /// builds the request around the reply handle.
    ///
    /// Unlike an `ActorRef::ask` to an actor on a pool, it never spins
    /// for the reply (`ask_spin`): the region passes the request on, to a
    /// shard and an entity or to another node, so a reply within the spin
    /// is rare, and the spinning held a core the entities needed. It
    /// parks from the start, through [`ActorRef::ask_then`]. Dropping the
    /// future before the reply comes drops the reply when it comes.
    pub async fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, AskError> {
        let (outcome, answered) = tokio::sync::oneshot::channel();
        self.region.ask_then(
            |reply| self.envelope(make(reply)),
            timeout,
            move |result| {
                let _waiter_gone = outcome.send(result);
            },
        );
        // The callback always runs (reply, timeout or termination); a
        // dropped sender means the system dropped it unrun.
        answered.await.unwrap_or(Err(AskError::SystemTerminated))
    }

    /// Request and reply with a callback, as [`ActorRef::ask_then`].
    pub fn ask_then<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
        then: impl FnOnce(Result<R, AskError>) + Send + 'static,
    ) {
        self.region
            .ask_then(|reply| self.envelope(make(reply)), timeout, then);
    }

    /// An `ActorRef` for this entity, for whatever takes one: an actor's
    /// `Context::ask`, a router, a reply address. It is local to this
    /// node (a message adapter of the region).
    pub fn to_actor_ref(&self) -> ActorRef<M> {
        let (shard, entity_id) = (self.shard, self.entity_id.clone());
        self.region.adapt(move |msg| RegionMsg::Deliver {
            shard,
            entity_id: entity_id.clone(),
            msg,
        })
    }
}
