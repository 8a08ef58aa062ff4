//! The router actor: owner of the routee list, parent and supervisor of a
//! pool's routees, and handler of the management protocol ([`RouterMsg`]).
//!
//! It watches every routee and drops one that terminates from the routing
//! table; a pool router without a resizer stops itself once its last
//! routee is gone (Akka's behaviour), a group router keeps running and
//! sends to dead letters. A
//! failure of the router actor itself (it only fails by panicking) restarts
//! it without touching the routees: the routing table lives in the shared
//! state, not in the actor instance.

use std::collections::HashSet;
use std::sync::Arc;

use super::broadcast::Broadcast;
use super::keyed_group::{self, KeyedGroup};
use super::resizer::Resizer;
use super::routed_ref::{broadcast, route_in, unroutable, ErrorSink};
use super::shared::RouterShared;
use crate::actor::actor_ref::{ActorRef, ToAnyRef};
use crate::actor::context::Context;
use crate::actor::definition::{Actor, HandleResult, Terminated};
use crate::ask::ReplyTo;
use crate::error::{Failure, SpawnError};
use crate::supervision::strategy::SupervisorStrategy;

/// The management protocol of a router, sent to
/// [`RouterRef::control`](super::RouterRef::control).
pub enum RouterMsg<M: Send + 'static> {
    /// Route `M` through the router actor instead of on the sender's side
    /// (ordered with the management messages sent before it).
    Route(M),
    /// Send the message to every routee (Akka's `Broadcast`).
    Broadcast(Broadcast<M>),
    /// Reply with the current routees (Akka's `GetRoutees`/`CurrentRoutees`,
    /// answered with `Routees`).
    GetRoutees(ReplyTo<Vec<ActorRef<M>>>),
    /// Add a routee (it is watched; ignored if already present or dead).
    AddRoutee(ActorRef<M>),
    /// Remove a routee. A pool's own routee is then stopped gracefully,
    /// after the messages already in its mailbox; any other keeps running.
    /// A pool that loses its last routee stops, unless it has a resizer.
    RemoveRoutee(ActorRef<M>),
    /// Pools only: create (positive) or gracefully stop (negative) that many
    /// routees; only routees the pool created itself are stopped, the least
    /// loaded first. With a resizer the change stops at its bounds;
    /// without one, shrinking below one leaves a pool with no routee,
    /// which stays (as in Akka) and grows again on request.
    AdjustPoolSize(i32),
    /// Runtime-internal traffic; cannot be built outside volley.
    Internal(Internal<M>),
}

/// Runtime-internal router traffic (see [`RouterMsg::Internal`]).
pub struct Internal<M: Send + 'static>(pub(crate) InternalMsg<M>);

pub(crate) enum InternalMsg<M: Send + 'static> {
    /// A message the routed ref forwarded to the router actor: sent before
    /// the routees existed, or while earlier such messages were queued.
    Forwarded { msg: M, sink: Option<ErrorSink> },
    /// Time to consult the resizer.
    ResizeTick,
    /// A keyed group's services, from the receptionist.
    Listing(std::collections::HashSet<ActorRef<M>>),
}

type SpawnRoutee<M> =
    dyn Fn(&mut Context<RouterActor<M>>) -> Result<ActorRef<M>, SpawnError> + Send + Sync;

/// What a pool needs to create and supervise its routees.
pub(crate) struct PoolConfig<M: Send + 'static> {
    pub(crate) spawn: Arc<SpawnRoutee<M>>,
    pub(crate) size: usize,
    pub(crate) strategy: SupervisorStrategy,
    pub(crate) resizer: Option<Resizer>,
}

pub(crate) enum RouterKind<M: Send + 'static> {
    Pool(PoolConfig<M>),
    Group(Vec<ActorRef<M>>),
    /// The services registered under a receptionist key.
    Keyed(KeyedGroup<M>),
}

pub(crate) struct RouterActor<M: Send + 'static> {
    pub(crate) shared: Arc<RouterShared<M>>,
    pub(crate) kind: Arc<RouterKind<M>>,
}

const RESIZE_TIMER: &str = "volley-router-resize";

impl<M: Send + 'static> RouterActor<M> {
    fn pool(&self) -> Option<&PoolConfig<M>> {
        match &*self.kind {
            RouterKind::Pool(p) => Some(p),
            RouterKind::Group(_) | RouterKind::Keyed(_) => None,
        }
    }

    /// A keyed group still waiting for its first listing.
    fn unlisted(&self) -> Option<&KeyedGroup<M>> {
        match &*self.kind {
            RouterKind::Keyed(group) if !group.is_listed() => Some(group),
            _ => None,
        }
    }

    /// A keyed group's new listing: its routees from now on. The first one
    /// lets senders route on their side, once the messages held for it
    /// are routed.
    fn take_listing(&self, ctx: &mut Context<Self>, services: HashSet<ActorRef<M>>) {
        let RouterKind::Keyed(group) = &*self.kind else {
            return;
        };
        let (routees, first) = group.listed(services);
        self.shared.publish(routees);
        if first {
            self.shared.forwarded_routed();
            ctx.unstash_all();
        }
    }

    fn routees(&self) -> Vec<ActorRef<M>> {
        self.shared.current().refs().to_vec()
    }

    fn spawn_routees(
        &self,
        ctx: &mut Context<Self>,
        n: usize,
    ) -> Result<Vec<ActorRef<M>>, SpawnError> {
        let Some(pool) = self.pool() else {
            return Ok(Vec::new());
        };
        let spawn = pool.spawn.clone();
        (0..n).map(|_| spawn(ctx)).collect()
    }

    fn grow(&self, ctx: &mut Context<Self>, n: usize) -> HandleResult {
        let new = self.spawn_routees(ctx, n)?;
        for r in &new {
            ctx.watch(r);
        }
        let mut refs = self.routees();
        refs.extend(new);
        self.shared.publish(refs);
        Ok(())
    }

    /// Takes the `n` least loaded of the pool's own routees out of the
    /// table and stops them gracefully. Routees added with `AddRoutee` are
    /// never picked: the pool did not create them.
    fn shrink(&self, ctx: &mut Context<Self>, n: usize) {
        let children = ctx.children();
        let mut refs = self.routees();
        let mut by_load: Vec<(usize, usize)> = refs
            .iter()
            .enumerate()
            .filter(|(_, r)| children.contains(&r.to_any()))
            .map(|(i, r)| (r.mailbox_len(), i))
            .collect();
        by_load.sort_unstable();
        let mut chosen: Vec<usize> = by_load.iter().take(n).map(|&(_, i)| i).collect();
        chosen.sort_unstable_by(|a, b| b.cmp(a));
        let removed: Vec<ActorRef<M>> = chosen.into_iter().map(|i| refs.remove(i)).collect();
        if removed.is_empty() {
            return;
        }
        self.shared.publish(refs);
        for r in removed {
            self.retire(ctx, &r);
        }
        // A pool shrunk on request to no routee stays, as Akka's does
        // (`AdjustPoolSize` never stops the router): messages are
        // unroutable until it grows again. Losing the last routee otherwise
        // (it stopped, or was removed) stops the pool.
    }

    /// Forgets a routee that left the table; stops it if it is our child.
    fn retire(&self, ctx: &mut Context<Self>, routee: &ActorRef<M>) {
        ctx.unwatch(routee);
        let any = routee.to_any_ref();
        if ctx.children().contains(&any) {
            routee.graceful_stop();
        }
    }

    /// A pool with a resizer stays (Akka's `stopRouterWhenAllRouteesRemoved`
    /// is false then): its resizer grows it back to the lower bound.
    fn stop_if_empty(&self, ctx: &mut Context<Self>) {
        let resized = self.pool().is_some_and(|p| p.resizer.is_some());
        if self.pool().is_some() && !resized && self.shared.current().is_empty() {
            tracing::debug!(router = %ctx.path(), "pool has no routees left, stopping");
            ctx.stop_self();
        }
    }

    fn route(&self, ctx: &Context<Self>, msg: M, sink: Option<&ErrorSink>) {
        // In the shared rotation, which also seeds each sending thread's:
        // a sender whose first messages passed through here continues
        // where they left off once it routes on its own side.
        let shared = &*self.shared;
        if let Err((err, msg)) = shared.with_shared_rotation(|r| route_in(shared, r, msg)) {
            unroutable(&ctx.myself().to_any(), err, msg, sink);
        }
    }

    fn arm_resizer(&self, ctx: &mut Context<Self>) {
        if let Some(resizer) = self.pool().and_then(|p| p.resizer.as_ref()) {
            ctx.schedule_once(
                RESIZE_TIMER,
                resizer.interval,
                RouterMsg::Internal(Internal(InternalMsg::ResizeTick)),
            );
        }
    }

    fn resize(&self, ctx: &mut Context<Self>) -> HandleResult {
        let Some(resizer) = self.pool().and_then(|p| p.resizer.clone()) else {
            return Ok(());
        };
        let lens: Vec<usize> = self.routees().iter().map(|r| r.mailbox_len()).collect();
        let delta = resizer.capacity_delta(&lens);
        if delta > 0 {
            tracing::debug!(router = %ctx.path(), delta, "resizer grows the pool");
            self.grow(ctx, delta as usize)?;
        } else if delta < 0 {
            tracing::debug!(router = %ctx.path(), delta, "resizer shrinks the pool");
            self.shrink(ctx, delta.unsigned_abs());
        }
        self.arm_resizer(ctx);
        Ok(())
    }
}

impl<M: Send + 'static> Actor for RouterActor<M> {
    type Msg = RouterMsg<M>;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let refs = match &*self.kind {
            RouterKind::Pool(pool) => {
                let size = match &pool.resizer {
                    Some(r) => r.initial_size(pool.size),
                    None => pool.size,
                };
                self.spawn_routees(ctx, size)?
            }
            RouterKind::Group(refs) => refs.clone(),
            // Its routees come with the receptionist's listings; until the
            // first, messages go through this actor, which holds them.
            RouterKind::Keyed(group) => return Ok(group.subscribe(ctx)?),
        };
        for r in &refs {
            ctx.watch(r);
        }
        self.shared.publish(refs);
        // The routing table exists: senders may now route on their side
        // (once the messages they forwarded before are routed).
        self.shared.forwarded_routed();
        self.arm_resizer(ctx);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: RouterMsg<M>) -> HandleResult {
        if self.unlisted().is_some()
            && matches!(
                msg,
                RouterMsg::Route(_)
                    | RouterMsg::Broadcast(_)
                    | RouterMsg::Internal(Internal(InternalMsg::Forwarded { .. }))
            )
        {
            keyed_group::hold(ctx, &self.shared, msg);
            return Ok(());
        }
        match msg {
            RouterMsg::Route(msg) => self.route(ctx, msg, None),
            RouterMsg::Internal(Internal(InternalMsg::Forwarded { msg, sink })) => {
                self.route(ctx, msg, sink.as_ref());
                self.shared.forwarded_routed();
            }
            RouterMsg::Internal(Internal(InternalMsg::ResizeTick)) => self.resize(ctx)?,
            RouterMsg::Internal(Internal(InternalMsg::Listing(services))) => {
                self.take_listing(ctx, services)
            }
            RouterMsg::Broadcast(b) => {
                let refs = self.routees();
                if refs.is_empty() {
                    let err = super::error::SelectError::NoRoutees;
                    unroutable(&ctx.myself().to_any(), err, b.msg, None);
                } else {
                    broadcast(&refs, b.msg, b.copy);
                }
            }
            RouterMsg::GetRoutees(reply) => reply.tell(self.routees()),
            RouterMsg::AddRoutee(routee) => {
                let mut refs = self.routees();
                if !routee.is_terminated() && !refs.contains(&routee) {
                    ctx.watch(&routee);
                    refs.push(routee);
                    self.shared.publish(refs);
                }
            }
            RouterMsg::RemoveRoutee(routee) => {
                let mut refs = self.routees();
                let before = refs.len();
                refs.retain(|r| *r != routee);
                if refs.len() != before {
                    self.shared.publish(refs);
                    self.retire(ctx, &routee);
                    self.stop_if_empty(ctx);
                }
            }
            RouterMsg::AdjustPoolSize(delta) => {
                if let Some(pool) = self.pool() {
                    // A resizer's bounds hold for requested changes too
                    // (Pekko clamps `AdjustPoolSize` to them): a change
                    // is cut short at the bound, never reversed.
                    let n = self.routees().len();
                    let (room_up, room_down) = match &pool.resizer {
                        Some(r) => (
                            r.upper_bound.saturating_sub(n),
                            n.saturating_sub(r.lower_bound),
                        ),
                        None => (usize::MAX, usize::MAX),
                    };
                    let by = delta.unsigned_abs() as usize;
                    if delta > 0 && room_up > 0 {
                        self.grow(ctx, by.min(room_up))?;
                    } else if delta < 0 && room_down > 0 {
                        self.shrink(ctx, by.min(room_down));
                    }
                }
            }
        }
        Ok(())
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, terminated: Terminated) -> HandleResult {
        let mut refs = self.routees();
        let before = refs.len();
        refs.retain(|r| *r != terminated.actor);
        if refs.len() != before {
            tracing::debug!(router = %ctx.path(), routee = %terminated.actor, "routee terminated");
            self.shared.publish(refs);
            self.stop_if_empty(ctx);
        }
        Ok(())
    }

    /// Keeps the routees: the routing table is in the shared state.
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<RouterMsg<M>>) {}

    /// Does not create routees again; only re-arms the resizer's timer,
    /// which the restart cancelled.
    fn post_restart(&mut self, ctx: &mut Context<Self>, _failure: &Failure) -> HandleResult {
        self.arm_resizer(ctx);
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        // Drops the refs to the (now stopped) routees, which would otherwise
        // keep them, and through their parent link this router, alive.
        self.shared.publish(Vec::new());
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        self.pool().map(|p| p.strategy.clone()).unwrap_or_default()
    }
}
