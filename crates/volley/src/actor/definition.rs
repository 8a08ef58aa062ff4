//! The [`Actor`] trait and [`Props`].

use std::fmt;
use std::sync::Arc;

use crate::actor::actor_ref::AnyRef;
use crate::actor::context::Context;
use crate::actor::mailbox::{MailboxConfig, Priority};
use crate::error::{ActorError, Failure};
use crate::supervision::strategy::SupervisorStrategy;

/// What handlers and fallible hooks return. An `Err` is a failure that the
/// actor's supervisor handles; so is a panic.
pub type HandleResult = Result<(), ActorError>;

/// The signal a watcher gets when an actor it watches has terminated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminated {
    /// The actor that terminated.
    pub actor: AnyRef,
}

/// The error behind the default [`Actor::on_terminated`]: a watched actor
/// terminated and the watcher did not handle it (Akka's DeathPactException).
#[derive(Debug, thiserror::Error)]
#[error("unhandled Terminated({0})")]
pub(crate) struct DeathPact(pub(crate) String);

/// An actor: state plus a synchronous handler for its protocol `Msg`.
///
/// The runtime calls these methods on one thread at a time, never
/// concurrently, so `&mut self` is all the synchronisation an actor needs.
/// Asynchronous work is started with [`Context::pipe_to`] and comes back as a
/// message.
pub trait Actor: Send + Sized + 'static {
    /// The actor's protocol: the messages it accepts, usually an enum.
    type Msg: Send + 'static;

    /// Handles one message.
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Self::Msg) -> HandleResult;

    /// Runs before the first message, on the actor's dispatcher. A failure
    /// (an error or a panic) here is an initialization failure (stopped by
    /// the default decider).
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let _ = ctx;
        Ok(())
    }

    /// Runs once the actor and all its children have stopped. Panics here are
    /// caught and logged.
    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        let _ = ctx;
    }

    /// Runs on the failed instance before it is replaced. `message` is the
    /// message whose handling failed, when [`Actor::keep_for_restart`] kept a
    /// copy; forwarding it to `ctx.myself()` retries it after the messages
    /// already queued. The default unwatches and stops all children and
    /// calls `post_stop`, as Akka's does: the new instance hears nothing of
    /// the children the restart stopped (no `Terminated`, no `watch_with`
    /// message). An override that stops children without unwatching them
    /// hands their ends to the new instance. Children an override keeps are
    /// restarted after `post_restart`. A panic here is logged and the
    /// restart goes on, as Akka does with an exception in `preRestart`.
    fn pre_restart(
        &mut self,
        ctx: &mut Context<Self>,
        failure: &Failure,
        message: Option<Self::Msg>,
    ) {
        let _ = (failure, message);
        for child in ctx.children() {
            ctx.unwatch(&child);
        }
        ctx.stop_all_children();
        self.post_stop(ctx);
    }

    /// Runs on the fresh instance after a restart. The default calls
    /// `pre_start`. A failure (an error or a panic) here is an
    /// initialization failure, as in Akka (stopped by the default decider).
    fn post_restart(&mut self, ctx: &mut Context<Self>, failure: &Failure) -> HandleResult {
        let _ = failure;
        self.pre_start(ctx)
    }

    /// A watched actor terminated (see [`Context::watch`]). The default fails
    /// the actor with a death pact, as in Akka; handle it to survive. An
    /// error or a panic here is a failure like one in `handle`.
    fn on_terminated(&mut self, ctx: &mut Context<Self>, terminated: Terminated) -> HandleResult {
        let _ = ctx;
        Err(ActorError::new(DeathPact(terminated.actor.to_string())))
    }

    /// No message came for the receive timeout
    /// ([`Context::set_receive_timeout`]); called again after each further
    /// timeout of silence. Default: nothing. An error or a panic here is a
    /// failure like one in `handle`.
    fn on_receive_timeout(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let _ = ctx;
        Ok(())
    }

    /// Whether `msg` counts as activity for the receive timeout. Default:
    /// every message does; return false for messages that must not keep
    /// an idle actor from timing out (Akka's `NotInfluenceReceiveTimeout`).
    fn influences_receive_timeout(msg: &Self::Msg) -> bool {
        let _ = msg;
        true
    }

    /// How this actor supervises its children. Default: one-for-one, restart
    /// on any failure, no limit. Called when a child fails. If this or the
    /// strategy's decider panics, this actor fails with that panic (its own
    /// supervisor decides, as Akka escalates an exception in a decider), and
    /// the child whose failure went undecided is stopped.
    fn supervisor_strategy(&self) -> SupervisorStrategy {
        SupervisorStrategy::default()
    }

    /// Returns a copy of `msg` to keep while it is handled, so that
    /// [`Actor::pre_restart`] can get it back if handling fails. Default:
    /// none, which costs nothing. Override (e.g. with `Some(msg.clone())`)
    /// for Akka's retry-in-preRestart pattern. A panic here is a failure of
    /// the handler, for this message.
    fn keep_for_restart(msg: &Self::Msg) -> Option<Self::Msg> {
        let _ = msg;
        None
    }
}

/// How to create (and re-create on restart) an actor, and where it runs.
pub struct Props<A: Actor> {
    pub(crate) factory: Arc<dyn Fn() -> A + Send + Sync>,
    pub(crate) mailbox: MailboxConfig,
    /// Set for a priority or control-aware mailbox.
    pub(crate) order: Option<Priority<A::Msg>>,
    pub(crate) dispatcher: Option<Arc<str>>,
    pub(crate) stash: StashConfig,
}

/// What a stash holds and what a restart does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StashConfig {
    pub(crate) capacity: u32,
    pub(crate) drop_on_restart: bool,
}

/// The stash capacity of props that do not set one.
pub const DEFAULT_STASH_CAPACITY: usize = 1000;

impl<A: Actor> Props<A> {
    /// Props that build the actor with `factory`, which runs again on every
    /// restart.
    pub fn new(factory: impl Fn() -> A + Send + Sync + 'static) -> Self {
        Props {
            factory: Arc::new(factory),
            mailbox: MailboxConfig::default(),
            order: None,
            dispatcher: None,
            stash: StashConfig {
                capacity: DEFAULT_STASH_CAPACITY as u32,
                drop_on_restart: false,
            },
        }
    }

    /// The most messages `Context::stash` keeps (default
    /// [`DEFAULT_STASH_CAPACITY`]); one more fails the actor.
    pub fn with_stash_capacity(mut self, capacity: usize) -> Self {
        self.stash.capacity = capacity.min(u32::MAX as usize) as u32;
        self
    }

    /// On restart, sends what is stashed to dead letters instead of
    /// handing it to the new instance ahead of the mailbox (the default,
    /// as in Akka typed).
    pub fn drop_stash_on_restart(mut self) -> Self {
        self.stash.drop_on_restart = true;
        self
    }

    /// Uses another mailbox: bounded or not. Combines with an order
    /// ([`Self::with_priority_mailbox`], [`Self::with_control_aware_mailbox`]).
    pub fn with_mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
        self
    }

    /// A stable priority mailbox (Akka's `UnboundedStablePriorityMailbox`,
    /// or the bounded one with [`Self::with_mailbox`]): messages with a
    /// lower `priority` are handled first, and messages of equal priority
    /// in the order they arrived. Timers' messages are ranked like any
    /// other; a graceful stop and `Terminated` rank behind every message
    /// queued before them. Full and bounded with [`Overflow::DropOldest`],
    /// it evicts the message that would be handled last.
    ///
    /// [`Overflow::DropOldest`]: crate::Overflow::DropOldest
    pub fn with_priority_mailbox(
        mut self,
        priority: impl Fn(&A::Msg) -> i32 + Send + Sync + 'static,
    ) -> Self {
        self.order = Some(Arc::new(Box::new(priority)));
        self
    }

    /// A control-aware mailbox (Akka's `ControlAwareMailbox`): messages for
    /// which `is_control` holds jump ahead of every other queued message,
    /// and each kind keeps its arrival order.
    pub fn with_control_aware_mailbox(
        self,
        is_control: impl Fn(&A::Msg) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.with_priority_mailbox(move |m| if is_control(m) { 0 } else { 1 })
    }

    /// Runs the actor on the named dispatcher from the settings.
    pub fn with_dispatcher(mut self, name: &str) -> Self {
        self.dispatcher = Some(name.into());
        self
    }
}

impl<A: Actor> Clone for Props<A> {
    fn clone(&self) -> Self {
        Props {
            factory: self.factory.clone(),
            mailbox: self.mailbox,
            order: self.order.clone(),
            dispatcher: self.dispatcher.clone(),
            stash: self.stash,
        }
    }
}

impl<A: Actor> fmt::Debug for Props<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Props")
            .field("actor", &std::any::type_name::<A>())
            .field("mailbox", &self.mailbox)
            .field("ordered", &self.order.is_some())
            .field("dispatcher", &self.dispatcher)
            .finish()
    }
}
