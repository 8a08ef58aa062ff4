//! Building routers: [`Router::pool`] and [`Router::group`].

use std::sync::Arc;

use super::keyed_group::KeyedGroupRouter;
use super::logic::{Logic, RoutingLogic};
use super::resizer::Resizer;
use super::round_robin::RoundRobin;
use super::router_actor::{PoolConfig, RouterActor, RouterKind};
use super::router_ref::RouterRef;
use super::shared::RouterShared;
use crate::actor::actor_ref::ActorRef;
use crate::actor::context::Context;
use crate::actor::definition::{Actor, Props};
use crate::discovery::receptionist::ServiceKey;
use crate::error::SpawnError;
use crate::supervision::strategy::SupervisorStrategy;
use crate::system::actor_system::ActorSystem;

/// Entry point for building routers.
///
/// ```
/// use volley::{Actor, ActorSystem, Context, HandleResult, Props, Router, SmallestMailbox};
///
/// struct Echo;
/// impl Actor for Echo {
///     type Msg = u32;
///     fn handle(&mut self, _ctx: &mut Context<Self>, _n: u32) -> HandleResult { Ok(()) }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let system = ActorSystem::new("doc").unwrap();
/// let router = Router::pool(4, Props::new(|| Echo))
///     .with_logic(SmallestMailbox::new())
///     .spawn(&system, "echoes")
///     .unwrap();
/// router.tell(7); // routed on this thread, straight into a routee's mailbox
/// system.terminate().await;
/// # });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Router;

impl Router {
    /// A pool of `size` routees created from `props`, children of the router
    /// and supervised by it. Round-robin unless told otherwise.
    pub fn pool<A: Actor>(size: usize, props: Props<A>) -> PoolRouter<A> {
        PoolRouter {
            size,
            props,
            logic: Logic::of(RoundRobin::new()),
            strategy: SupervisorStrategy::default(),
            resizer: None,
        }
    }

    /// A router over the actors registered under `key` with the system's
    /// receptionist, following its listings (Akka Typed's
    /// `Routers.group(key)`). Random unless told otherwise, as Akka's.
    pub fn group_of<M: Send + 'static>(key: ServiceKey<M>) -> KeyedGroupRouter<M> {
        KeyedGroupRouter::new(key)
    }

    /// A router over existing actors. Round-robin unless told otherwise.
    pub fn group<M: Send + 'static>(routees: Vec<ActorRef<M>>) -> GroupRouter<M> {
        GroupRouter {
            routees,
            logic: Logic::of(RoundRobin::new()),
        }
    }
}

/// A pool router being configured; see [`Router::pool`].
pub struct PoolRouter<A: Actor> {
    size: usize,
    props: Props<A>,
    logic: Logic<A::Msg>,
    strategy: SupervisorStrategy,
    resizer: Option<Resizer>,
}

impl<A: Actor> PoolRouter<A> {
    /// Uses another routing logic.
    pub fn with_logic(mut self, logic: impl RoutingLogic<A::Msg>) -> Self {
        self.logic = Logic::of(logic);
        self
    }

    /// How the router supervises its routees. Default: restart on any
    /// failure without limit (Akka pools escalate by default; volley's
    /// router is the supervisor instead, so a failure never restarts the
    /// router's siblings).
    pub fn with_supervisor_strategy(mut self, strategy: SupervisorStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Makes the pool elastic; its initial size is kept within the
    /// resizer's bounds.
    pub fn with_resizer(mut self, resizer: Resizer) -> Self {
        self.resizer = Some(resizer);
        self
    }

    /// Spawns the router under `/user`.
    pub fn spawn(self, system: &ActorSystem, name: &str) -> Result<RouterRef<A::Msg>, SpawnError> {
        spawn_top(self.build(), system, name)
    }

    /// Spawns the router as a child of the actor owning `ctx`, so it stops
    /// (with its routees) when that actor stops.
    pub fn spawn_child<P: Actor>(
        self,
        ctx: &mut Context<P>,
        name: &str,
    ) -> Result<RouterRef<A::Msg>, SpawnError> {
        spawn_child_of(self.build(), ctx, name)
    }

    fn build(self) -> RouterParts<A::Msg> {
        let props = self.props;
        let kind = RouterKind::Pool(PoolConfig {
            spawn: Arc::new(move |ctx: &mut Context<RouterActor<A::Msg>>| {
                ctx.spawn_anonymous(props.clone())
            }),
            size: self.size,
            strategy: self.strategy,
            resizer: self.resizer,
        });
        router_props(kind, self.logic)
    }
}

/// A group router being configured; see [`Router::group`].
pub struct GroupRouter<M: Send + 'static> {
    routees: Vec<ActorRef<M>>,
    logic: Logic<M>,
}

impl<M: Send + 'static> GroupRouter<M> {
    /// Uses another routing logic.
    pub fn with_logic(mut self, logic: impl RoutingLogic<M>) -> Self {
        self.logic = Logic::of(logic);
        self
    }

    /// Spawns the router under `/user`.
    pub fn spawn(self, system: &ActorSystem, name: &str) -> Result<RouterRef<M>, SpawnError> {
        let parts = router_props(RouterKind::Group(self.routees), self.logic);
        spawn_top(parts, system, name)
    }

    /// Spawns the router as a child of the actor owning `ctx`.
    pub fn spawn_child<P: Actor>(
        self,
        ctx: &mut Context<P>,
        name: &str,
    ) -> Result<RouterRef<M>, SpawnError> {
        let parts = router_props(RouterKind::Group(self.routees), self.logic);
        spawn_child_of(parts, ctx, name)
    }
}

/// Spawns a router made of `parts` under `/user`.
pub(crate) fn spawn_top<M: Send + 'static>(
    (props, shared): RouterParts<M>,
    system: &ActorSystem,
    name: &str,
) -> Result<RouterRef<M>, SpawnError> {
    let control = system.spawn(name, props)?;
    Ok(RouterRef::new(control, shared))
}

/// Spawns a router made of `parts` as a child of the actor owning `ctx`.
pub(crate) fn spawn_child_of<M: Send + 'static, P: Actor>(
    (props, shared): RouterParts<M>,
    ctx: &mut Context<P>,
    name: &str,
) -> Result<RouterRef<M>, SpawnError> {
    let control = ctx.spawn(name, props)?;
    Ok(RouterRef::new(control, shared))
}

/// The router actor's props and the state it shares with its `RouterRef`.
pub(crate) type RouterParts<M> = (Props<RouterActor<M>>, Arc<RouterShared<M>>);

pub(crate) fn router_props<M: Send + 'static>(
    kind: RouterKind<M>,
    logic: Logic<M>,
) -> RouterParts<M> {
    let shared = Arc::new(RouterShared::new(logic));
    let kind = Arc::new(kind);
    let for_actor = shared.clone();
    let props = Props::new(move || RouterActor {
        shared: for_actor.clone(),
        kind: kind.clone(),
    });
    (props, shared)
}
