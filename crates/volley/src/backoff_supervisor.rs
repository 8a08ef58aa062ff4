//! [`BackoffSupervisor`]: a parent that creates its child again, after a
//! growing delay, whenever the child stops (Akka's `BackoffSupervisor` with
//! `BackoffOpts.onStop`).

use std::collections::VecDeque;
use std::fmt;
use std::time::Instant;

use crate::actor::{Actor, HandleResult, Props, Terminated};
use crate::actor_ref::ActorRef;
use crate::backoff::BackoffOptions;
use crate::context::Context;
use crate::event_stream::DeadLetterReason;
use crate::supervision::SupervisorStrategy;
use crate::time::TimerDriver;

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
    /// Replies with the current child, `None` while it is being backed off.
    GetCurrentChild(ActorRef<Option<ActorRef<M>>>),
    /// Replies with the number of consecutive restarts (0 once the backoff
    /// has started over).
    GetRestartCount(ActorRef<u32>),
    /// Starts the backoff over: the next restart waits the minimum delay.
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

/// A parent that runs one child and, when the child stops, creates it
/// again from its props after a delay that grows with each consecutive
/// restart (see [`BackoffOptions`]). Messages sent to the supervisor as
/// [`BackoffMsg::Msg`] go to the current child; while there is none, up to
/// the options' stash capacity wait for the next one and the rest go to
/// dead letters ([`DeadLetterReason::BackoffOverflow`]).
///
/// The child's failures are handled by the options' supervisor strategy
/// ([`BackoffOptions::with_supervisor_strategy`]; default: restart at
/// once); one that stops the child hands it to the backoff. Past the
/// options' restart limit the supervisor stops itself. The child is
/// always named [`BACKOFF_CHILD_NAME`] under the supervisor.
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
    child: Option<ActorRef<A::Msg>>,
    restarts: u32,
    /// When the current child started: healthy running is measured from
    /// here.
    started_at: Option<Instant>,
    waiting: VecDeque<A::Msg>,
}

impl<A: Actor> BackoffSupervisor<A> {
    /// Props of a supervisor for a child made from `child_props`.
    pub fn props(child_props: Props<A>, options: BackoffOptions) -> Props<Self> {
        Props::new(move || BackoffSupervisor {
            child_props: child_props.clone(),
            options: options.clone(),
            child: None,
            restarts: 0,
            started_at: None,
            waiting: VecDeque::new(),
        })
    }

    fn start_child(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let child = ctx.spawn(BACKOFF_CHILD_NAME, self.child_props.clone())?;
        ctx.watch(&child);
        for msg in self.waiting.drain(..) {
            child.tell(msg);
        }
        self.started_at = Some(TimerDriver::of(ctx.system()).now());
        self.child = Some(child);
        Ok(())
    }

    /// The restart count, started over if the child has run long enough.
    fn restart_count(&mut self, ctx: &Context<Self>) -> u32 {
        let now = TimerDriver::of(ctx.system()).now();
        let healthy = self.child.is_some()
            && self.started_at.is_some_and(|at| {
                now.saturating_duration_since(at) >= self.options.reset_backoff_after()
            });
        if healthy {
            self.restarts = 0;
        }
        self.restarts
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
            BackoffMsg::Reset => self.restarts = 0,
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
        let restarts = self.restart_count(ctx);
        self.child = None;
        if self
            .options
            .max_restarts()
            .is_some_and(|max| restarts >= max)
        {
            tracing::debug!(actor = %ctx.path(), restarts, "backoff restart limit reached, stopping");
            ctx.stop_self();
            return Ok(());
        }
        let delay = self.options.delay(restarts);
        self.restarts = restarts.saturating_add(1);
        tracing::debug!(actor = %ctx.path(), ?delay, "child stopped, starting it again after a backoff");
        ctx.schedule_once(RESTART_TIMER, delay, BackoffMsg::Tick(BackoffTick(())));
        Ok(())
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        self.options.child_strategy()
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
