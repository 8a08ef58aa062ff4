//! The builder [`actor_fn_with`](crate::actor_fn_with) returns: lifecycle
//! hooks and a supervisor strategy for a closure actor.

use std::sync::Arc;

use volley::{Context, Failure, HandleResult, Props, SupervisorStrategy};

use crate::actor_fn::{FnActor, Handler};

/// The context every hook of an `FnActor<M, S>` gets.
type Ctx<M, S> = Context<FnActor<M, S>>;
type StartHook<M, S> = Arc<dyn Fn(&mut S, &mut Ctx<M, S>) -> HandleResult + Send + Sync>;
type StopHook<M, S> = Arc<dyn Fn(&mut S, &mut Ctx<M, S>) + Send + Sync>;
type PreRestartHook<M, S> = Arc<dyn Fn(&mut S, &mut Ctx<M, S>, &Failure) + Send + Sync>;
type RestartHook<M, S> =
    Arc<dyn Fn(&mut S, &mut Ctx<M, S>, &Failure) -> HandleResult + Send + Sync>;

/// The hooks an `FnActor` runs, shared by all its incarnations (each has
/// its own state, so the hooks need none of their own).
pub(crate) struct Hooks<M: Send + 'static, S: Send + 'static> {
    pub(crate) on_start: Option<StartHook<M, S>>,
    pub(crate) on_stop: Option<StopHook<M, S>>,
    pub(crate) on_pre_restart: Option<PreRestartHook<M, S>>,
    pub(crate) on_restart: Option<RestartHook<M, S>>,
    pub(crate) strategy: Option<SupervisorStrategy>,
}

/// Builds the props of a closure actor with a state, hooks and a
/// supervisor strategy: made by [`actor_fn_with`](crate::actor_fn_with).
/// Each hook stands for the [`volley::Actor`] method it names and gets the
/// incarnation's state; an unset hook does what the trait's default does.
pub struct FnActorBuilder<M: Send + 'static, S: Send + 'static> {
    state: S,
    make_handler: Arc<dyn Fn() -> Handler<M, S> + Send + Sync>,
    hooks: Hooks<M, S>,
}

impl<M: Send + 'static, S: Clone + Send + Sync + 'static> FnActorBuilder<M, S> {
    pub(crate) fn new(
        state: S,
        make_handler: Arc<dyn Fn() -> Handler<M, S> + Send + Sync>,
    ) -> Self {
        FnActorBuilder {
            state,
            make_handler,
            hooks: Hooks {
                on_start: None,
                on_stop: None,
                on_pre_restart: None,
                on_restart: None,
                strategy: None,
            },
        }
    }

    /// Runs `hook` before the first message (`Actor::pre_start`), and after
    /// each restart unless [`Self::on_restart`] is set.
    pub fn on_start(
        mut self,
        hook: impl Fn(&mut S, &mut Ctx<M, S>) -> HandleResult + Send + Sync + 'static,
    ) -> Self {
        self.hooks.on_start = Some(Arc::new(hook));
        self
    }

    /// Runs `hook` once the actor and its children have stopped
    /// (`Actor::post_stop`), and on the failed incarnation before a restart
    /// unless [`Self::on_pre_restart`] is set.
    pub fn on_stop(
        mut self,
        hook: impl Fn(&mut S, &mut Ctx<M, S>) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.on_stop = Some(Arc::new(hook));
        self
    }

    /// Runs `hook` on the failed incarnation instead of
    /// `Actor::pre_restart`'s default, which stops the children and runs
    /// the stop hook.
    pub fn on_pre_restart(
        mut self,
        hook: impl Fn(&mut S, &mut Ctx<M, S>, &Failure) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.on_pre_restart = Some(Arc::new(hook));
        self
    }

    /// Runs `hook` on the fresh incarnation after a restart instead of the
    /// start hook (`Actor::post_restart`).
    pub fn on_restart(
        mut self,
        hook: impl Fn(&mut S, &mut Ctx<M, S>, &Failure) -> HandleResult + Send + Sync + 'static,
    ) -> Self {
        self.hooks.on_restart = Some(Arc::new(hook));
        self
    }

    /// Supervises the actor's children with `strategy` instead of the
    /// default (`Actor::supervisor_strategy`).
    pub fn with_supervisor_strategy(mut self, strategy: SupervisorStrategy) -> Self {
        self.hooks.strategy = Some(strategy);
        self
    }

    /// The props: each incarnation gets a clone of the state and of the
    /// handler, and the hooks.
    pub fn props(self) -> Props<FnActor<M, S>> {
        let FnActorBuilder {
            state,
            make_handler,
            hooks,
        } = self;
        let hooks = Arc::new(hooks);
        Props::new(move || FnActor::new(state.clone(), make_handler(), hooks.clone()))
    }
}
