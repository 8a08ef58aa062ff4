//! [`Context`]: what a handler can do besides changing its own state.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::actor::actor_ref::{ActorRef, AnyRef, ToAnyRef};
use crate::actor::cell::ActorCell;
use crate::actor::definition::{Actor, Props};
use crate::actor::path::ActorPath;
use crate::actor::system_msg::SystemMsg;
use crate::ask::AskError;
use crate::error::SpawnError;
use crate::system::actor_system::ActorSystem;
use crate::time::timers::{TimerKey, Timers};
use crate::util::locks::lock;

/// An actor this one watches, and how its `Terminated` is delivered.
pub(crate) struct Watched<M> {
    pub(crate) actor: AnyRef,
    /// `Some` for `watch_with`: delivered through `handle` instead of
    /// `on_terminated`.
    pub(crate) message: Option<M>,
}

/// Death-watch and timer state, allocated the first time an actor uses
/// either: most actors never do, and keeping it out of line keeps every
/// actor smaller (the spawn benchmark counts the bytes).
pub(crate) struct Rare<M> {
    /// Actors this one watches.
    pub(crate) watching: HashMap<u64, Watched<M>>,
    /// Actors that watch this one.
    pub(crate) watchers: Vec<AnyRef>,
    pub(crate) timers: Timers,
    /// Messages put aside with `stash`, oldest first.
    pub(crate) stash: VecDeque<M>,
}

/// The actor's view of the runtime, passed to every handler and hook.
pub struct Context<A: Actor> {
    pub(crate) cell: Arc<ActorCell<A>>,
    pub(crate) rare: Option<Box<Rare<A::Msg>>>,
    pub(crate) stop_requested: bool,
    /// Inside `pre_start`/`post_restart`: failures are initialization failures.
    pub(crate) initializing: bool,
    /// The receive timeout, when one is set.
    pub(crate) receive_timeout: Option<Box<crate::time::receive_timeout::ReceiveTimeout>>,
    /// Messages taken from the mailbox and not handled yet; always older
    /// than anything still in the mailbox. Here rather than in the cell so
    /// that `unstash_all` puts stashed messages straight in front of them.
    pub(crate) batch: VecDeque<crate::actor::mailbox::Envelope<A::Msg>>,
    /// The props' stash settings.
    pub(crate) stash_config: crate::actor::definition::StashConfig,
}

impl<A: Actor> Context<A> {
    pub(crate) fn new(
        cell: Arc<ActorCell<A>>,
        stash_config: crate::actor::definition::StashConfig,
    ) -> Self {
        Context {
            cell,
            rare: None,
            stop_requested: false,
            initializing: false,
            receive_timeout: None,
            batch: VecDeque::new(),
            stash_config,
        }
    }

    pub(crate) fn rare_mut(&mut self) -> &mut Rare<A::Msg> {
        self.rare.get_or_insert_with(|| {
            Box::new(Rare {
                watching: HashMap::new(),
                watchers: Vec::new(),
                timers: Timers::new(),
                stash: VecDeque::new(),
            })
        })
    }

    /// This actor's own ref.
    pub fn myself(&self) -> ActorRef<A::Msg> {
        self.cell.typed()
    }

    /// This actor's path.
    pub fn path(&self) -> &ActorPath {
        self.cell.path()
    }

    /// The parent (its supervisor); `None` only for the root guardian.
    pub fn parent(&self) -> Option<&AnyRef> {
        self.cell.parent()
    }

    /// The actor system.
    pub fn system(&self) -> &ActorSystem {
        self.cell.system()
    }

    /// The current children, including those being stopped.
    pub fn children(&self) -> Vec<AnyRef> {
        lock(&self.cell.children).refs()
    }

    /// The child of that name.
    pub fn child(&self, name: &str) -> Option<AnyRef> {
        lock(&self.cell.children).get(name).map(|e| e.actor.clone())
    }

    /// Spawns a named child supervised by this actor.
    pub fn spawn<B: Actor>(
        &mut self,
        name: &str,
        props: Props<B>,
    ) -> Result<ActorRef<B::Msg>, SpawnError> {
        self.cell.spawn_child(Some(name), props)
    }

    /// A ref that takes messages of another protocol `N` and hands each to
    /// this actor as `map(n)` (Akka Typed's `messageAdapter`): how an actor
    /// takes the replies and events of actors whose protocols are not its
    /// own. See [`ActorRef::adapt`] for where `map` runs and how the ref
    /// behaves; unlike Akka, each call makes a new adapter rather than
    /// replacing the one registered for `N`, and none needs registering.
    pub fn message_adapter<N: Send + 'static>(
        &self,
        map: impl Fn(N) -> A::Msg + Send + Sync + 'static,
    ) -> ActorRef<N> {
        self.myself().adapt(map)
    }

    /// Spawns a child with a generated name (`$a`, `$b`, …).
    pub fn spawn_anonymous<B: Actor>(
        &mut self,
        props: Props<B>,
    ) -> Result<ActorRef<B::Msg>, SpawnError> {
        self.cell.spawn_child(None, props)
    }

    /// Stops a child now (its queued messages go to dead letters). Returns
    /// false, doing nothing, if `child` is not a child of this actor: only a
    /// parent stops its children this way (anyone may `graceful_stop`).
    pub fn stop(&mut self, child: &impl ToAnyRef) -> bool {
        crate::actor::children::stop_child(&self.cell.children, &child.to_any_ref())
    }

    /// Stops every child.
    pub fn stop_all_children(&mut self) {
        let children = lock(&self.cell.children).mark_all_stopping();
        for child in children {
            child.send_system(SystemMsg::Stop);
        }
    }

    /// Stops this actor once the current handler returns: children first,
    /// then `post_stop`. Queued messages go to dead letters.
    pub fn stop_self(&mut self) {
        self.stop_requested = true;
    }

    /// Death watch: when `target` terminates, this actor's
    /// [`Actor::on_terminated`] runs, exactly once, even if `target` is
    /// already dead. Watching twice is the same as once.
    pub fn watch(&mut self, target: &impl ToAnyRef) {
        self.watch_inner(target.to_any_ref(), None);
    }

    /// Like [`Context::watch`], but the termination arrives as `message`
    /// through [`Actor::handle`] (Akka Typed's `watchWith`).
    pub fn watch_with(&mut self, target: &impl ToAnyRef, message: A::Msg) {
        self.watch_inner(target.to_any_ref(), Some(message));
    }

    fn watch_inner(&mut self, target: AnyRef, message: Option<A::Msg>) {
        if target == self.cell.any_ref() {
            return;
        }
        let uid = target.watch_key();
        let me = self.cell.any_ref();
        let watching = &mut self.rare_mut().watching;
        let first = !watching.contains_key(&uid);
        watching.insert(
            uid,
            Watched {
                actor: target.clone(),
                message,
            },
        );
        if first {
            target.send_system(SystemMsg::Watch(me));
        }
    }

    /// Ends a death watch; no `Terminated` for `target` arrives afterwards.
    pub fn unwatch(&mut self, target: &impl ToAnyRef) {
        let target = target.to_any_ref();
        let removed = self
            .rare
            .as_mut()
            .and_then(|r| r.watching.remove(&target.watch_key()));
        if removed.is_some() {
            target.send_system(SystemMsg::Unwatch(self.cell.any_ref()));
        }
    }

    /// Sends `msg` to this actor after `delay`. A timer with the same key is
    /// replaced. Cancelled on stop and restart.
    pub fn schedule_once(&mut self, key: impl Into<TimerKey>, delay: Duration, msg: A::Msg) {
        let me = self.myself();
        let driver = self.cell.system().timer_driver();
        self.rare_mut()
            .timers
            .start_once(&driver, key.into(), me, delay, msg);
    }

    /// Sends a copy of `msg` to this actor every `interval`, the first after
    /// `interval`: [`Context::schedule_with_fixed_delay`] with an initial
    /// delay of one interval (the name it had first; kept as an alias). A
    /// timer with the same key is replaced. Cancelled on stop and restart.
    pub fn schedule_repeatedly(&mut self, key: impl Into<TimerKey>, interval: Duration, msg: A::Msg)
    where
        A::Msg: Clone,
    {
        self.schedule_with_fixed_delay(key, interval, interval, msg);
    }

    /// Sends a copy of `msg` after `initial_delay`, then each `delay` after
    /// the previous one was sent (Akka's `startTimerWithFixedDelay`): if
    /// the runtime falls behind, the next send is a whole `delay` after the
    /// late one, so over time there are somewhat fewer messages than
    /// `1 / delay` a second, never a burst. Replaces a timer with the same
    /// key; cancelled on stop and restart.
    pub fn schedule_with_fixed_delay(
        &mut self,
        key: impl Into<TimerKey>,
        initial_delay: Duration,
        delay: Duration,
        msg: A::Msg,
    ) where
        A::Msg: Clone,
    {
        self.start_repeating(key.into(), initial_delay, delay, false, msg);
    }

    /// Sends a copy of `msg` after `initial_delay`, then every `interval`
    /// on a fixed schedule (Akka's `startTimerAtFixedRate`): sends the
    /// runtime missed are made up at once, in a burst, so the count over
    /// time stays `1 / interval` a second. Replaces a timer with the same
    /// key; cancelled on stop and restart.
    pub fn schedule_at_fixed_rate(
        &mut self,
        key: impl Into<TimerKey>,
        initial_delay: Duration,
        interval: Duration,
        msg: A::Msg,
    ) where
        A::Msg: Clone,
    {
        self.start_repeating(key.into(), initial_delay, interval, true, msg);
    }

    fn start_repeating(
        &mut self,
        key: TimerKey,
        initial_delay: Duration,
        interval: Duration,
        catch_up: bool,
        msg: A::Msg,
    ) where
        A::Msg: Clone,
    {
        let me = self.myself();
        let driver = self.cell.system().timer_driver();
        self.rare_mut().timers.start_repeating(
            &driver,
            key,
            me,
            initial_delay,
            interval,
            catch_up,
            msg,
        );
    }

    /// Signals the actor ([`Actor::on_receive_timeout`]) once no message has
    /// come for `after`, and again after each further `after` of silence,
    /// until cancelled or set again (Akka's `setReceiveTimeout`). Messages
    /// for which [`Actor::influences_receive_timeout`] is false do not
    /// count. Kept across restarts, as in Akka classic; ends with the actor.
    pub fn set_receive_timeout(&mut self, after: Duration) {
        let me = self.myself();
        let driver = self.cell.system().timer_driver();
        let previous = self.receive_timeout.take();
        self.receive_timeout = Some(crate::time::receive_timeout::ReceiveTimeout::arm(
            previous, &me, after, driver,
        ));
    }

    /// Cancels the receive timeout; a signal already queued is dropped.
    pub fn cancel_receive_timeout(&mut self) {
        self.receive_timeout = None;
    }

    /// The receive timeout, if one is set.
    pub fn receive_timeout(&self) -> Option<Duration> {
        self.receive_timeout.as_ref().map(|t| t.after)
    }

    /// Puts `msg` aside, to be handled later with [`Context::unstash_all`]
    /// or [`Context::unstash`] (Akka's `Stash`). At most the props' stash
    /// capacity ([`Props::with_stash_capacity`]) are kept: past it the
    /// message goes to dead letters and the error, returned from the
    /// handler with `?`, fails the actor for its supervisor.
    pub fn stash(&mut self, msg: A::Msg) -> Result<(), StashOverflow> {
        let capacity = self.stash_config.capacity as usize;
        if self.stash_len() >= capacity {
            self.cell.dead_letter(
                crate::actor::mailbox::Envelope::Msg(msg),
                crate::system::event_stream::DeadLetterReason::StashOverflow,
            );
            return Err(StashOverflow {
                actor: self.path().to_string(),
                capacity,
            });
        }
        self.rare_mut().stash.push_back(msg);
        Ok(())
    }

    /// Hands every stashed message back, in the order stashed, ahead of
    /// everything not yet handled; returns how many.
    pub fn unstash_all(&mut self) -> usize {
        self.unstash(usize::MAX)
    }

    /// Hands the `n` oldest stashed messages back, in order, ahead of
    /// everything not yet handled; returns how many there were.
    pub fn unstash(&mut self, n: usize) -> usize {
        let Some(rare) = self.rare.as_mut() else {
            return 0;
        };
        let n = n.min(rare.stash.len());
        for msg in rare.stash.drain(..n).rev() {
            self.batch
                .push_front(crate::actor::mailbox::Envelope::Msg(msg));
        }
        n
    }

    /// How many messages are stashed.
    pub fn stash_len(&self) -> usize {
        self.rare.as_ref().map_or(0, |r| r.stash.len())
    }

    /// Cancels a timer; its message is not delivered even if already queued.
    /// Returns false if no such timer was active. See also
    /// [`Context::cancel_all_timers`].
    pub fn cancel_timer(&mut self, key: impl Into<TimerKey>) -> bool {
        let key = key.into();
        self.rare.as_mut().is_some_and(|r| r.timers.cancel(&key))
    }

    /// Cancels every timer of this actor (Akka's `cancelAll`); none of their
    /// messages is delivered, even those already queued.
    pub fn cancel_all_timers(&mut self) {
        if let Some(r) = self.rare.as_mut() {
            r.timers.cancel_all();
        }
    }

    /// True while the timer is pending (single-shot) or running (repeating).
    pub fn is_timer_active(&self, key: impl Into<TimerKey>) -> bool {
        let key = key.into();
        self.rare.as_ref().is_some_and(|r| r.timers.is_active(&key))
    }

    /// Runs `future` on the system's tokio runtime and sends `map(output)`
    /// to this actor (to dead letters if it has stopped by then). `map`
    /// runs on the runtime, not in the actor: a panic in it, or in
    /// `future`, is logged at error naming the actor, and nothing is sent.
    pub fn pipe_to<F, T>(&self, future: F, map: impl FnOnce(T) -> A::Msg + Send + 'static)
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let me = self.myself();
        self.cell.system().runtime_handle().spawn(async move {
            // Both are user code run outside the actor: a panic in either
            // must not vanish with the runtime's task.
            let output = match catching_panics(future).await {
                Ok(output) => output,
                Err(payload) => {
                    return tracing::error!(
                        actor = %me.path(),
                        "pipe_to's future (or ctx.ask's request function) panicked; \
                         nothing is sent: {}",
                        crate::util::panic::panic_text(&*payload)
                    )
                }
            };
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| map(output))) {
                Ok(msg) => me.tell(msg),
                Err(payload) => tracing::error!(
                    actor = %me.path(),
                    "pipe_to's mapping panicked; its message is not sent: {}",
                    crate::util::panic::panic_text(&*payload)
                ),
            }
        });
    }

    /// Asks `target` and delivers the outcome to this actor as
    /// `map(result)` (Akka Typed's `context.ask`). The request is built
    /// and sent now, in the handler (a panic in `make` fails this actor,
    /// as in Akka); the outcome (the reply, or `Timeout`,
    /// `ReplyDropped`, `RecipientTerminated`) is mapped where it happens,
    /// on the replier's thread for a reply, and told to this actor, so
    /// one replier's replies arrive in the order it sent them. `map` runs
    /// outside the actor: a panic in it is logged and nothing is
    /// delivered (Akka fails the actor).
    pub fn ask<N, R>(
        &self,
        target: &ActorRef<N>,
        make: impl FnOnce(ActorRef<R>) -> N + Send + 'static,
        timeout: Duration,
        map: impl FnOnce(Result<R, AskError>) -> A::Msg + Send + 'static,
    ) where
        N: Send + 'static,
        R: Send + 'static,
    {
        crate::ask::ask_from_actor(self.system(), self.myself(), target, make, timeout, map);
    }
}

/// `future`'s output, or the payload of a panic in polling it (after
/// which it is not polled again).
async fn catching_panics<T>(
    future: impl Future<Output = T>,
) -> Result<T, Box<dyn std::any::Any + Send>> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(poll) => poll.map(Ok),
            Err(payload) => std::task::Poll::Ready(Err(payload)),
        }
    })
    .await
}

/// A stash at its capacity refused a message (which went to dead letters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stash of {actor} is full ({capacity} messages)")]
pub struct StashOverflow {
    /// The stashing actor's path.
    pub actor: String,
    /// The props' stash capacity.
    pub capacity: usize,
}
