//! [`BackoffSupervisor`]: a parent that creates its child again, after a
//! growing delay, whenever the child stops (Akka's `BackoffSupervisor` with
//! `BackoffOpts.onStop`), or restarts it after that delay whenever it fails
//! (`BackoffOpts.onFailure`), counting the restarts either way.

use std::collections::VecDeque;
use std::fmt;

use crate::actor::actor_ref::{ActorRef, ToAnyRef};
use crate::actor::context::Context;
use crate::actor::definition::{Actor, HandleResult, Props, Terminated};
use crate::supervision::backoff::{BackoffOptions, BackoffState};
use crate::supervision::strategy::SupervisorStrategy;
use crate::system::event_stream::DeadLetterReason;
use crate::util::locks::lock;

/// The name of a [`BackoffSupervisor`]'s child, in every incarnation.
pub const BACKOFF_CHILD_NAME: &str = "child";

const RESTART_TIMER: &str = "backoff-restart";

/// What a [`BackoffSupervisor`] accepts: messages for its child, and
/// questions about it (Akka's `GetCurrentChild`, `GetRestartCount`,
/// `Reset`).
pub enum BackoffMsg<M: Send + 'static> {
    /// Forwarded to the current child; kept while there is none (up to the
    /// options' stash capacity, then dead letters) and forwarded, in
    /// order, to the next one.
    Msg(M),
    /// Replies with the current child: on stop, `None` while it is being
    /// backed off; on failure, the child, which keeps its ref while it
    /// waits out its backoff.
    GetCurrentChild(ActorRef<Option<ActorRef<M>>>),
    /// Replies with the number of consecutive backoff restarts: children
    /// created again after a stop, or failed children restarted after a
    /// delay. 0 once the child has run for the reset period since the last
    /// one.
    GetRestartCount(ActorRef<u32>),
    /// Starts the count over: the next restart waits the minimum delay.
    Reset,
    /// The supervisor's own timer; nothing outside volley builds one.
    Tick(BackoffTick),
}

impl<M: Send + 'static> fmt::Debug for BackoffMsg<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackoffMsg::Msg(_) => f.write_str("Msg(..)"),
            BackoffMsg::GetCurrentChild(r) => write!(f, "GetCurrentChild({r:?})"),
            BackoffMsg::GetRestartCount(r) => write!(f, "GetRestartCount({r:?})"),
            BackoffMsg::Reset => f.write_str("Reset"),
            BackoffMsg::Tick(_) => f.write_str("Tick"),
        }
    }
}

/// The backoff's delay has passed (see [`BackoffMsg::Tick`]).
#[derive(Debug)]
pub struct BackoffTick(());

/// A parent that runs one child and backs off its restarts.
///
/// **On stop** ([`BackoffOptions::on_stop`]): when the child stops, it is
/// created again from its props after a delay that grows with each
/// consecutive restart (see [`BackoffOptions`]). Messages sent to the
/// supervisor as [`BackoffMsg::Msg`] go to the current child; while there
/// is none, up to the options' stash capacity wait for the next one and the
/// rest go to dead letters ([`DeadLetterReason::BackoffOverflow`]). The
/// child's failures are handled by the options' supervisor strategy
/// ([`BackoffOptions::with_supervisor_strategy`]; default: restart at
/// once); one that stops the child hands it to the backoff.
///
/// **On failure** ([`BackoffOptions::on_failure`], or a supervisor strategy
/// that carries a backoff, such as
/// [`SupervisorStrategy::restart_with_backoff`]): each restart the strategy
/// decides waits out the delay; the child is restarted in place, keeping
/// its ref, and holds what arrives meanwhile. When the strategy carries a
/// backoff, its delays and stash capacity are used, the lower of its
/// restart limit and the options' applies, and the reset period is the
/// options' if set, else the strategy's if set, else its minimum delay.
/// The supervisor stops itself when the child stops for good: past the
/// restart limit, on a `Stop` from the strategy, or when the child stops
/// itself.
///
/// Either way the supervisor counts the restarts
/// ([`BackoffMsg::GetRestartCount`]), starts the count over once the
/// child has run for the reset period, and stops itself, and with it the
/// child, past the restart limit. The child is always named
/// [`BACKOFF_CHILD_NAME`] under the supervisor.
///
/// ```
/// use std::time::Duration;
/// use volley::{Actor, ActorSystem, BackoffMsg, BackoffOptions, BackoffSupervisor, Context, HandleResult, Props};
///
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = String;
///     fn handle(&mut self, ctx: &mut Context<Self>, msg: String) -> HandleResult {
///         if msg == "quit" {
///             ctx.stop_self(); // created again after the backoff
///         }
///         Ok(())
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let system = ActorSystem::new("doc").unwrap();
/// let options = BackoffOptions::on_stop(Duration::from_millis(100), Duration::from_secs(10), 0.2);
/// let supervisor = system
///     .spawn("worker", BackoffSupervisor::props(Props::new(|| Worker), options))
///     .unwrap();
/// supervisor.tell(BackoffMsg::Msg("hello".to_string()));
/// system.terminate().await;
/// # });
/// ```
pub struct BackoffSupervisor<A: Actor> {
    child_props: Props<A>,
    options: BackoffOptions,
    /// The backoff of an on-failure supervisor; `None` on stop.
    failure_backoff: Option<BackoffOptions>,
    strategy: SupervisorStrategy,
    child: Option<ActorRef<A::Msg>>,
    /// On stop, the restarts, counted here. On failure they are counted
    /// where the restart is decided, with the child's restart statistics.
    on_stop_count: BackoffState,
    waiting: VecDeque<A::Msg>,
}

impl<A: Actor> BackoffSupervisor<A> {
    /// Props of a supervisor for a child made from `child_props`.
    pub fn props(child_props: Props<A>, options: BackoffOptions) -> Props<Self> {
        let failure_backoff = options.failure_backoff();
        let strategy = match &failure_backoff {
            Some(backoff) => options.child_strategy().with_backoff(backoff.clone()),
            None => options.child_strategy(),
        };
        Props::new(move || BackoffSupervisor {
            child_props: child_props.clone(),
            options: options.clone(),
            failure_backoff: failure_backoff.clone(),
            strategy: strategy.clone(),
            child: None,
            on_stop_count: BackoffState::default(),
            waiting: VecDeque::new(),
        })
    }

    fn start_child(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let child = ctx.spawn(BACKOFF_CHILD_NAME, self.child_props.clone())?;
        ctx.watch(&child);
        for msg in self.waiting.drain(..) {
            child.tell(msg);
        }
        // Healthy running is measured from the child's start, not from
        // when the delay was due: a late timer must not count as running.
        self.on_stop_count.restarted_at = Some(ctx.system().timer_driver().now());
        self.child = Some(child);
        Ok(())
    }

    /// Applies `f` to the count: this supervisor's own on stop, the
    /// child's restart statistics on failure (none yet: `on_none`).
    fn with_count<R>(
        &mut self,
        ctx: &Context<Self>,
        on_none: R,
        f: impl FnOnce(&BackoffOptions, &mut BackoffState) -> R,
    ) -> R {
        let Some(backoff) = &self.failure_backoff else {
            return f(&self.options, &mut self.on_stop_count);
        };
        let Some(child) = &self.child else {
            return on_none;
        };
        let mut children = lock(&ctx.cell.children);
        match children
            .entry_mut(&child.to_any_ref())
            .and_then(|entry| entry.stats.backoff_mut())
        {
            Some(state) => f(backoff, state),
            None => on_none,
        }
    }

    /// The restart count, started over if the child has run long enough.
    fn restart_count(&mut self, ctx: &Context<Self>) -> u32 {
        let now = ctx.system().timer_driver().now();
        self.with_count(ctx, 0, |options, state| options.restarts(state, now))
    }

    fn reset(&mut self, ctx: &Context<Self>) {
        self.with_count(ctx, (), |_, state| state.restarts = 0);
    }

    fn hold(&mut self, ctx: &Context<Self>, msg: A::Msg) {
        if self.waiting.len() < self.options.stash_capacity() {
            self.waiting.push_back(msg);
        } else {
            ctx.system().dead_letter(
                ctx.path(),
                std::any::type_name::<A::Msg>(),
                DeadLetterReason::BackoffOverflow,
            );
        }
    }

    /// On stop: creates the child again after its delay, or stops past the
    /// limit.
    fn back_off(&mut self, ctx: &mut Context<Self>) {
        let now = ctx.system().timer_driver().now();
        let Some(delay) = self.options.next(&mut self.on_stop_count, now) else {
            tracing::debug!(actor = %ctx.path(), restarts = self.on_stop_count.restarts, "backoff restart limit reached, stopping");
            ctx.stop_self();
            return;
        };
        tracing::debug!(actor = %ctx.path(), ?delay, "child stopped, starting it again after a backoff");
        ctx.schedule_once(RESTART_TIMER, delay, BackoffMsg::Tick(BackoffTick(())));
    }
}

impl<A: Actor> Actor for BackoffSupervisor<A> {
    type Msg = BackoffMsg<A::Msg>;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.start_child(ctx)
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Self::Msg) -> HandleResult {
        match msg {
            BackoffMsg::Msg(msg) => match &self.child {
                Some(child) => child.tell(msg),
                None => self.hold(ctx, msg),
            },
            BackoffMsg::GetCurrentChild(reply) => reply.tell(self.child.clone()),
            BackoffMsg::GetRestartCount(reply) => reply.tell(self.restart_count(ctx)),
            BackoffMsg::Reset => self.reset(ctx),
            BackoffMsg::Tick(_) => {
                if self.child.is_none() {
                    self.start_child(ctx)?;
                }
            }
        }
        Ok(())
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, terminated: Terminated) -> HandleResult {
        if self.child.as_ref().is_none_or(|c| *c != terminated.actor) {
            return Ok(());
        }
        self.child = None;
        if self.failure_backoff.is_some() {
            // Restarts happen in place: a child that terminated was
            // stopped for good (the limit, a `Stop`, or by itself).
            tracing::debug!(actor = %ctx.path(), "child stopped, stopping");
            ctx.stop_self();
        } else {
            self.back_off(ctx);
        }
        Ok(())
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        self.strategy.clone()
    }

    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        for _ in self.waiting.drain(..) {
            ctx.system().dead_letter(
                ctx.path(),
                std::any::type_name::<A::Msg>(),
                DeadLetterReason::RecipientTerminated,
            );
        }
    }
}
