//! A group router over the actors registered under a receptionist key
//! (Akka Typed's `Routers.group(key)`).
//!
//! The router actor subscribes to the key when it starts; each listing
//! replaces its routees. Until the first listing arrives, senders' messages
//! go through the router actor (as for any router before its routees
//! exist), which stashes them, up to [`KEYED_GROUP_STASH`], and routes them
//! once the listing is in. The receptionist already watches the services,
//! so the router does not: a service that stops leaves with the next
//! listing.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use super::builder::{router_props, spawn_child_of, spawn_top, RouterParts};
use super::logic::{Logic, RoutingLogic};
use super::random::RandomRouting;
use super::router_actor::{Internal, InternalMsg, RouterActor, RouterKind, RouterMsg};
use super::router_ref::RouterRef;
use crate::actor::actor_ref::ActorRef;
use crate::actor::context::Context;
use crate::actor::definition::Actor;
use crate::discovery::receptionist::ServiceKey;
use crate::error::SpawnError;
use crate::system::actor_system::ActorSystem;

/// Most messages a keyed group router holds while it waits for its first
/// listing (Akka's group router stashes as many); more go to dead letters.
pub const KEYED_GROUP_STASH: usize = 10_000;

/// A group router over a receptionist key being configured; see
/// [`Router::group_of`](super::Router::group_of).
pub struct KeyedGroupRouter<M: Send + 'static> {
    key: ServiceKey<M>,
    logic: Logic<M>,
    prefer_local: bool,
}

/// What a keyed group's router actor keeps across its restarts.
pub(crate) struct KeyedGroup<M: Send + 'static> {
    key: ServiceKey<M>,
    prefer_local: bool,
    /// The first listing has arrived.
    listed: AtomicBool,
}

impl<M: Send + 'static> KeyedGroupRouter<M> {
    pub(crate) fn new(key: ServiceKey<M>) -> Self {
        KeyedGroupRouter {
            key,
            logic: Logic::of(RandomRouting::new()),
            prefer_local: false,
        }
    }

    /// Uses another routing logic (random by default, as Akka Typed's
    /// group router).
    pub fn with_logic(mut self, logic: impl RoutingLogic<M>) -> Self {
        self.logic = Logic::of(logic);
        self
    }

    /// Routes only to the services on this node while there is one (Akka
    /// Typed's `preferLocalRoutees`); to the others when there is none.
    pub fn prefer_local_routees(mut self) -> Self {
        self.prefer_local = true;
        self
    }

    fn parts(self) -> RouterParts<M> {
        let group = KeyedGroup {
            key: self.key,
            prefer_local: self.prefer_local,
            listed: AtomicBool::new(false),
        };
        let (props, shared) = router_props(RouterKind::Keyed(group), self.logic);
        (props.with_stash_capacity(KEYED_GROUP_STASH), shared)
    }

    /// Spawns the router under `/user`. Fails as a spawn does, and if the
    /// system's receptionist cannot be started (the system terminates).
    pub fn spawn(self, system: &ActorSystem, name: &str) -> Result<RouterRef<M>, SpawnError> {
        system.receptionist()?;
        spawn_top(self.parts(), system, name)
    }

    /// Spawns the router as a child of the actor owning `ctx`.
    pub fn spawn_child<P: Actor>(
        self,
        ctx: &mut Context<P>,
        name: &str,
    ) -> Result<RouterRef<M>, SpawnError> {
        ctx.system().receptionist()?;
        spawn_child_of(self.parts(), ctx, name)
    }
}

impl<M: Send + 'static> KeyedGroup<M> {
    /// Subscribes the router actor to its key (from `pre_start`).
    pub(crate) fn subscribe(&self, ctx: &mut Context<RouterActor<M>>) -> Result<(), SpawnError> {
        let listings = ctx
            .myself()
            .adapt(|listing: crate::discovery::receptionist::Listing<M>| {
                RouterMsg::Internal(Internal(InternalMsg::Listing(listing.services)))
            });
        ctx.system().receptionist()?.subscribe(&self.key, listings);
        Ok(())
    }

    /// Whether the first listing has arrived.
    pub(crate) fn is_listed(&self) -> bool {
        self.listed.load(Ordering::Relaxed)
    }

    /// The routees of a listing; true if it is the first.
    pub(crate) fn listed(&self, services: HashSet<ActorRef<M>>) -> (Vec<ActorRef<M>>, bool) {
        let is_local = |r: &ActorRef<M>| r.to_any().as_remote().is_none();
        let mut routees: Vec<ActorRef<M>> = services.into_iter().collect();
        if self.prefer_local && routees.iter().any(is_local) {
            routees.retain(is_local);
        }
        // A stable order, whatever the set's: a round robin then visits
        // the same routees in the same order listing after listing.
        routees.sort_by_cached_key(|r| r.path().to_string());
        let first = !self.listed.swap(true, Ordering::Relaxed);
        (routees, first)
    }
}

/// Messages a keyed group's router actor holds until its first listing.
pub(crate) fn hold<M: Send + 'static>(
    ctx: &mut Context<RouterActor<M>>,
    shared: &super::shared::RouterShared<M>,
    msg: RouterMsg<M>,
) {
    let forwarded = matches!(
        msg,
        RouterMsg::Internal(Internal(InternalMsg::Forwarded { .. }))
    );
    if ctx.stash(msg).is_err() && forwarded {
        // Went to dead letters (the stash is full): no longer on its way.
        shared.forwarded_routed();
    }
}
