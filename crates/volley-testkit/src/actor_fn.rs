//! Actors written as closures, for tests whose actor has one purpose
//! (Akka Typed's `Behaviors.receiveMessage`): echo, forward, count, fail.
//!
//! [`actor_fn`] keeps what the actor needs in the closure's captures.
//! [`actor_fn_with`] adds a state that lifecycle hooks share with the
//! handler, and the hooks themselves (see [`FnActorBuilder`]). An actor
//! that must answer `Terminated`, a receive timeout or keep a failed
//! message for its restart is written as an [`Actor`] as usual.

use std::sync::Arc;

use volley::{Actor, Context, Failure, HandleResult, Props, SupervisorStrategy};

use crate::actor_fn_builder::{FnActorBuilder, Hooks};

/// The handler an [`FnActor`] runs for each message, with its state.
pub(crate) type Handler<M, S> =
    Box<dyn FnMut(&mut S, &mut Context<FnActor<M, S>>, M) -> HandleResult + Send>;

/// An actor whose `handle` is a closure: made by [`actor_fn`] (no state,
/// `S = ()`) or [`actor_fn_with`].
pub struct FnActor<M: Send + 'static, S: Send + 'static = ()> {
    state: S,
    handler: Handler<M, S>,
    hooks: Arc<Hooks<M, S>>,
}

impl<M: Send + 'static, S: Send + 'static> FnActor<M, S> {
    pub(crate) fn new(state: S, handler: Handler<M, S>, hooks: Arc<Hooks<M, S>>) -> Self {
        FnActor {
            state,
            handler,
            hooks,
        }
    }
}

impl<M: Send + 'static, S: Send + 'static> Actor for FnActor<M, S> {
    type Msg = M;

    fn handle(&mut self, ctx: &mut Context<Self>, msg: M) -> HandleResult {
        (self.handler)(&mut self.state, ctx, msg)
    }

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        match &self.hooks.on_start {
            Some(hook) => hook(&mut self.state, ctx),
            None => Ok(()),
        }
    }

    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        if let Some(hook) = &self.hooks.on_stop {
            hook(&mut self.state, ctx);
        }
    }

    fn pre_restart(&mut self, ctx: &mut Context<Self>, failure: &Failure, _message: Option<M>) {
        if let Some(hook) = &self.hooks.on_pre_restart {
            return hook(&mut self.state, ctx, failure);
        }
        // The trait's default, which an override cannot call.
        for child in ctx.children() {
            ctx.unwatch(&child);
        }
        ctx.stop_all_children();
        self.post_stop(ctx);
    }

    fn post_restart(&mut self, ctx: &mut Context<Self>, failure: &Failure) -> HandleResult {
        match &self.hooks.on_restart {
            Some(hook) => hook(&mut self.state, ctx, failure),
            None => self.pre_start(ctx),
        }
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        self.hooks.strategy.clone().unwrap_or_default()
    }
}

/// Props of an actor that runs `handler` for each message. Each
/// incarnation (the first and every restart) gets a fresh clone of
/// `handler`, as a factory gives a fresh actor; state meant to outlive a
/// restart goes in an `Arc` the closure captures.
///
/// ```
/// use volley::{ActorSystem, ActorRef};
/// use volley_testkit::{actor_fn, TestProbe};
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() {
/// let system = ActorSystem::new("doc").unwrap();
/// let probe = TestProbe::<u32>::new(&system);
/// let echo = system
///     .spawn("echo", actor_fn(|_ctx, (n, to): (u32, ActorRef<u32>)| {
///         to.tell(n);
///         Ok(())
///     }))
///     .unwrap();
/// echo.tell((7, probe.actor_ref()));
/// probe.expect_msg(7);
/// system.terminate().await;
/// # }
/// ```
pub fn actor_fn<M, F>(mut handler: F) -> Props<FnActor<M>>
where
    M: Send + 'static,
    F: FnMut(&mut Context<FnActor<M>>, M) -> HandleResult + Clone + Send + Sync + 'static,
{
    actor_fn_with((), move |_: &mut (), ctx, msg| handler(ctx, msg)).props()
}

/// A builder of an actor that runs `handler` on its state for each
/// message, with lifecycle hooks and a supervisor strategy set by the
/// builder's methods (Akka Typed's `Behaviors.setup` with
/// `receiveSignal`); [`FnActorBuilder::props`] ends it. Each incarnation
/// starts from a fresh clone of `state` and of `handler`.
///
/// ```
/// use volley::{ActorSystem, ActorRef};
/// use volley_testkit::{actor_fn_with, TestProbe};
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() {
/// let system = ActorSystem::new("doc").unwrap();
/// let probe = TestProbe::<String>::new(&system);
/// let greeter = system
///     .spawn(
///         "greeter",
///         actor_fn_with(probe.actor_ref(), |to, _ctx, name: &'static str| {
///             to.tell(format!("hello {name}"));
///             Ok(())
///         })
///         .on_start(|to, _ctx| {
///             to.tell("started".into());
///             Ok(())
///         })
///         .on_stop(|to, _ctx| to.tell("stopped".into()))
///         .props(),
///     )
///     .unwrap();
/// greeter.tell("ann");
/// probe.expect_msg("started".into());
/// probe.expect_msg("hello ann".into());
/// system.stop(&greeter);
/// probe.expect_msg("stopped".into());
/// system.terminate().await;
/// # }
/// ```
pub fn actor_fn_with<M, S, F>(state: S, handler: F) -> FnActorBuilder<M, S>
where
    M: Send + 'static,
    S: Clone + Send + Sync + 'static,
    F: FnMut(&mut S, &mut Context<FnActor<M, S>>, M) -> HandleResult
        + Clone
        + Send
        + Sync
        + 'static,
{
    FnActorBuilder::new(state, Arc::new(move || Box::new(handler.clone())))
}
