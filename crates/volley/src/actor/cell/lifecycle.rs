//! Creation, failure, supervision, restart, death watch and stopping: the
//! system-message side of a cell.
//!
//! A failed actor suspends (handles no user messages) and reports to its
//! parent, which answers with a directive. Stopping and restarting both wait
//! for the children being stopped to terminate before going on, so a child's
//! `post_stop` always runs before its parent's, and a restarted actor can
//! reuse its children's names.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::{ActorCell, Inner};
use crate::actor::actor_ref::AnyRef;
use crate::actor::context::Rare;
use crate::actor::definition::{Actor, Terminated};
use crate::actor::mailbox::Envelope;
use crate::actor::system_msg::SystemMsg;
use crate::error::{Failure, FailureKind};
use crate::supervision::backoff::BackoffRestart;
use crate::supervision::strategy::{Directive, RestartPlan};
use crate::system::event_stream::{DeadLetterReason, LifecycleEvent, LifecycleKind};
use crate::util::locks::lock;
use crate::util::panic::panic_text;

/// Where a cell is in its life.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// Waiting for `Create` (runs `pre_start`).
    Created,
    /// Handling messages.
    Running,
    /// Failed; waiting for the parent's directive.
    Suspended,
    /// Restarting; waiting for the children being stopped to terminate.
    Recreating(Arc<Failure>),
    /// Restarting; waiting out a backoff before creating the new instance.
    BackingOff(Arc<super::backoff::Waiting>),
    /// Stopping; waiting for all children to terminate.
    Terminating,
    /// Done.
    Terminated,
}

impl PartialEq for Mode {
    /// Compares the phase only, not the failure being recovered from.
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// A system message that reaches a cell after it closed its queue.
pub(super) fn answer_for_the_dead(uid: u64, msg: SystemMsg) {
    match msg {
        SystemMsg::Watch(watcher) => watcher.send_system(SystemMsg::DeathWatchNotification(uid)),
        // A child that failed or stopped while its parent was going away:
        // stop it, so nothing is left running under a dead parent.
        SystemMsg::Failed { child, .. } => child.send_system(SystemMsg::Stop),
        _ => {}
    }
}

impl<A: Actor> ActorCell<A> {
    /// Handles the queued system messages. The common case, none, is one
    /// load inlined into the activation; the handling stays out of line so
    /// that its size (every system message kind) does not decide whether
    /// this is inlined.
    #[inline]
    pub(super) fn process_system(&self, inner: &mut Inner<A>) {
        if self.queues.has_system() {
            self.drain_system(inner);
        }
    }

    #[inline(never)]
    fn drain_system(&self, inner: &mut Inner<A>) {
        self.queues.drain_system(|msg| {
            if inner.mode == Mode::Terminated {
                answer_for_the_dead(self.uid, msg);
            } else {
                self.handle_system(inner, msg);
            }
        });
    }

    fn handle_system(&self, inner: &mut Inner<A>, msg: SystemMsg) {
        match msg {
            SystemMsg::Watch(watcher) => {
                let watchers = &mut inner.ctx.rare_mut().watchers;
                if !watchers.contains(&watcher) {
                    watchers.push(watcher);
                }
            }
            SystemMsg::Unwatch(watcher) => {
                if let Some(rare) = inner.ctx.rare.as_mut() {
                    rare.watchers.retain(|w| *w != watcher);
                }
            }
            SystemMsg::DeathWatchNotification(uid) => self.watched_terminated(inner, uid),
            SystemMsg::Failed { child, failure } => self.child_failed(inner, child, failure),
            SystemMsg::ChildTerminated(child) => self.child_terminated(inner, child),
            SystemMsg::Resume => {
                if inner.mode == Mode::Suspended {
                    inner.failed_message = None;
                    if inner.actor.is_some() {
                        inner.mode = Mode::Running;
                        self.resume_escalated();
                    } else {
                        self.resume_unstarted(inner);
                    }
                }
            }
            SystemMsg::Restart(failure) => self.restart(inner, failure, None),
            SystemMsg::RestartAfter(restart) => {
                self.restart(inner, restart.failure.clone(), Some(&restart))
            }
            SystemMsg::BackoffElapsed => self.backoff_elapsed(inner),
            SystemMsg::Stop => self.stop_now(inner),
        }
    }

    pub(super) fn start(&self, inner: &mut Inner<A>) {
        if inner.mode != Mode::Created {
            return;
        }
        let Some(actor) = self.new_instance(inner) else {
            return;
        };
        inner.actor = Some(actor);
        inner.mode = Mode::Running;
        if self.run_pre_start(inner) {
            self.publish_lifecycle(LifecycleKind::Started);
        }
    }

    /// Runs `pre_start` on the new instance; true if it succeeded. An
    /// instance whose `pre_start` failed never started: it is dropped at
    /// once, so no hook runs on it again (no `pre_restart`, no
    /// `post_stop`), as Akka clears an actor whose creation failed.
    fn run_pre_start(&self, inner: &mut Inner<A>) -> bool {
        inner.ctx.initializing = true;
        self.call(inner, |actor, ctx, _| actor.pre_start(ctx));
        inner.ctx.initializing = false;
        if inner.mode == Mode::Suspended {
            inner.actor = None;
        }
        // Not running also when `pre_start` stopped the actor: that one
        // did start, and keeps its `post_stop`.
        inner.mode == Mode::Running
    }

    /// Builds a fresh actor from the props; a panicking factory is an
    /// initialization failure.
    fn new_instance(&self, inner: &mut Inner<A>) -> Option<A> {
        let factory = inner.props.factory.clone();
        match catch_unwind(AssertUnwindSafe(|| factory())) {
            Ok(actor) => Some(actor),
            Err(payload) => {
                let cause = Failure {
                    actor: self.path().to_string(),
                    kind: FailureKind::Panic(panic_text(&*payload)),
                };
                self.fail(inner, FailureKind::Initialization(Box::new(cause)), None);
                None
            }
        }
    }

    /// Suspends the actor and reports the failure to the parent.
    pub(super) fn fail(&self, inner: &mut Inner<A>, kind: FailureKind, kept: Option<A::Msg>) {
        let kind = if matches!(inner.mode, Mode::Created | Mode::Recreating(_))
            || inner.ctx.initializing
        {
            match kind {
                k @ FailureKind::Initialization(_) => k,
                k => FailureKind::Initialization(Box::new(Failure {
                    actor: self.path().to_string(),
                    kind: k,
                })),
            }
        } else {
            kind
        };
        let failure = Arc::new(Failure {
            actor: self.path().to_string(),
            kind,
        });
        // Akka logs every failure; a supervisor that expects failures can
        // filter this target.
        tracing::warn!(actor = %self.path(), "{failure}");
        if let Some(metrics) = self.system.metrics() {
            let panicked = match &failure.kind {
                FailureKind::Initialization(cause) => matches!(cause.kind, FailureKind::Panic(_)),
                kind => matches!(kind, FailureKind::Panic(_)),
            };
            metrics.failure(panicked);
        }
        if matches!(inner.mode, Mode::Terminating | Mode::Terminated) {
            return;
        }
        inner.mode = Mode::Suspended;
        inner.failed_message = kept;
        match &self.parent {
            Some(parent) => parent.send_system(SystemMsg::Failed {
                child: inner.ctx.cell.any_ref(),
                failure,
            }),
            None => {
                tracing::error!(actor = %self.path(), "root guardian failed, stopping: {failure}");
                self.begin_stop(inner);
            }
        }
    }

    fn child_failed(&self, inner: &mut Inner<A>, child: AnyRef, failure: Arc<Failure>) {
        if matches!(inner.mode, Mode::Terminating | Mode::Terminated) {
            child.send_system(SystemMsg::Stop);
            return;
        }
        // The strategy and its decider are user code: a panic there is a
        // failure of this supervisor, as an exception in Akka's decider is.
        let decided = catch_unwind(AssertUnwindSafe(|| {
            let strategy = inner
                .actor
                .as_ref()
                .map(|a| a.supervisor_strategy())
                .unwrap_or_default();
            let directive = strategy.decide(&failure);
            (strategy, directive)
        }));
        let mut children = lock(&self.children);
        let Some(entry) = children.entry_mut(&child) else {
            return; // not (or no longer) our child
        };
        if entry.is_stopping() {
            return;
        }
        let (strategy, directive) = match decided {
            Ok(decided) => decided,
            Err(payload) => {
                // Nobody is left to decide for the child, and a restart or
                // resume of this supervisor does not reach its children
                // here: stop the child rather than leave it suspended.
                children.mark_stopping(&child);
                drop(children);
                child.send_system(SystemMsg::Stop);
                let text = panic_text(&*payload);
                tracing::error!(
                    actor = %self.path(),
                    "supervisor strategy panicked on the failure of {}: {text}",
                    child.path()
                );
                self.fail(inner, FailureKind::Panic(text), None);
                return;
            }
        };
        let plan = match directive {
            Directive::Restart => {
                strategy.plan_restart(&mut entry.stats, || self.system.timer_driver().now())
            }
            _ => RestartPlan::Now,
        };
        let directive = match directive {
            Directive::Restart if plan == RestartPlan::Refused => {
                tracing::debug!(child = %child.path(), "restart limit reached, stopping");
                Directive::Stop
            }
            d => d,
        };
        let targets: Vec<AnyRef> = if strategy.is_all_for_one() && directive != Directive::Resume {
            children.refs()
        } else {
            vec![child.clone()]
        };
        match directive {
            Directive::Resume => {
                drop(children);
                child.send_system(SystemMsg::Resume);
            }
            Directive::Restart => {
                drop(children);
                for t in targets {
                    t.send_system(match plan {
                        RestartPlan::After {
                            delay,
                            stash_capacity,
                        } => SystemMsg::RestartAfter(Box::new(BackoffRestart {
                            failure: failure.clone(),
                            delay,
                            stash_capacity,
                        })),
                        _ => SystemMsg::Restart(failure.clone()),
                    });
                }
            }
            Directive::Stop => {
                for t in &targets {
                    children.mark_stopping(t);
                }
                drop(children);
                for t in targets {
                    t.send_system(SystemMsg::Stop);
                }
            }
            Directive::Escalate => {
                children.mark_escalated(&child);
                drop(children);
                self.fail(inner, FailureKind::Escalated(failure), None);
            }
        }
    }

    /// With `backoff`, the new instance is created once its delay has
    /// passed (see `backoff`); the old one goes now.
    fn restart(
        &self,
        inner: &mut Inner<A>,
        failure: Arc<Failure>,
        backoff: Option<&BackoffRestart>,
    ) {
        if matches!(
            inner.mode,
            Mode::Terminating | Mode::Terminated | Mode::Recreating(_) | Mode::BackingOff(_)
        ) {
            return;
        }
        if let Some(rare) = inner.ctx.rare.as_mut() {
            rare.timers.cancel_all();
        }
        let message = inner.failed_message.take();
        // No instance: the last one's `pre_start` failed, and nothing runs
        // on it again; the next one starts afresh, without the children
        // the failed `pre_start` spawned (Akka's `faultCreate`).
        inner.restart_as_start = inner.actor.is_none();
        if inner.restart_as_start {
            self.stop_children_of_unstarted(inner);
        }
        self.call_quietly(inner, "pre_restart", |actor, ctx| {
            actor.pre_restart(ctx, &failure, message)
        });
        inner.actor = None;
        // What the old instance stashed goes to the new one first, as in
        // Akka typed, or to dead letters if the props say so.
        if inner.ctx.stash_config.drop_on_restart {
            self.drop_stash(inner, DeadLetterReason::RecipientTerminated);
        } else {
            inner.ctx.unstash_all();
        }
        if std::mem::take(&mut inner.ctx.stop_requested) {
            self.begin_stop(inner);
            return;
        }
        if let Some(backoff) = backoff {
            self.wait_for_backoff(inner, backoff);
        } else if lock(&self.children).any_stopping() {
            inner.mode = Mode::Recreating(failure);
        } else {
            self.finish_restart(inner, failure);
        }
    }

    /// A `Resume` for an instance whose `pre_start` failed: there is no
    /// state to resume, so a new instance is created and started instead,
    /// as Akka turns such a Resume into a Create.
    #[cold]
    fn resume_unstarted(&self, inner: &mut Inner<A>) {
        tracing::warn!(actor = %self.path(), "resume of an actor that never started: creating it afresh");
        let failure = Arc::new(Failure {
            actor: self.path().to_string(),
            kind: FailureKind::Panic("resumed before it ever started".into()),
        });
        self.restart(inner, failure, None);
    }

    /// Stops (and unwatches) the children that an instance whose
    /// `pre_start` failed had spawned: the next instance spawns its own,
    /// under the same names, once these have terminated.
    fn stop_children_of_unstarted(&self, inner: &mut Inner<A>) {
        let children = lock(&self.children).refs();
        for child in &children {
            inner.ctx.unwatch(child);
        }
        inner.ctx.stop_all_children();
    }

    pub(super) fn finish_restart(&self, inner: &mut Inner<A>, failure: Arc<Failure>) {
        inner.mode = Mode::Recreating(failure.clone());
        // The children `pre_restart` kept, taken before the new instance
        // spawns any: restarted once it runs (Akka's `finishRecreate`), so
        // that none is left suspended by a failure it escalated, or
        // running on state the restart was meant to reset.
        let survivors = self.kept_children();
        let Some(actor) = self.new_instance(inner) else {
            return;
        };
        inner.actor = Some(actor);
        inner.mode = Mode::Running;
        let restarted = if std::mem::take(&mut inner.restart_as_start) {
            self.run_pre_start(inner)
        } else {
            inner.ctx.initializing = true;
            self.call(inner, |actor, ctx, _| actor.post_restart(ctx, &failure));
            inner.ctx.initializing = false;
            inner.mode == Mode::Running
        };
        if restarted {
            self.publish_lifecycle(LifecycleKind::Restarted);
            for child in survivors {
                child.send_system(SystemMsg::Restart(failure.clone()));
            }
        }
    }

    fn child_terminated(&self, inner: &mut Inner<A>, child: AnyRef) {
        let (now_empty, still_stopping) = {
            let mut children = lock(&self.children);
            children.remove(&child);
            (children.is_empty(), children.any_stopping())
        };
        match &inner.mode {
            Mode::Terminating if now_empty => self.finish_stop(inner),
            Mode::Recreating(failure) if !still_stopping => {
                let failure = failure.clone();
                self.finish_restart(inner, failure);
            }
            _ => {}
        }
    }

    /// A `Stop`: begins stopping, or, once a shutdown drain has passed its
    /// deadline, stops at once the children still draining.
    fn stop_now(&self, inner: &mut Inner<A>) {
        if inner.mode == Mode::Terminating && self.system.shutdown_state().forced() {
            let children = lock(&self.children).refs();
            for child in children {
                child.send_system(SystemMsg::Stop);
            }
        } else {
            self.begin_stop(inner);
        }
    }

    /// Stops the children first; `finish_stop` runs when the last is gone.
    /// While the system drains at shutdown, the children are stopped
    /// gracefully, each after the messages queued for it.
    pub(super) fn begin_stop(&self, inner: &mut Inner<A>) {
        if matches!(inner.mode, Mode::Terminating | Mode::Terminated) {
            return;
        }
        self.cancel_backoff(inner);
        inner.mode = Mode::Terminating;
        if let Some(rare) = inner.ctx.rare.as_mut() {
            rare.timers.cancel_all();
        }
        let (to_stop, empty) = {
            let mut children = lock(&self.children);
            children.close();
            (children.mark_all_stopping(), children.is_empty())
        };
        let drain = self.system.shutdown_state().drains();
        for child in to_stop {
            if drain {
                child.graceful_stop();
            } else {
                child.send_system(SystemMsg::Stop);
            }
        }
        if empty {
            self.finish_stop(inner);
        }
    }

    /// Sends what is stashed to dead letters.
    fn drop_stash(&self, inner: &mut Inner<A>, reason: DeadLetterReason) {
        if let Some(rare) = inner.ctx.rare.as_mut() {
            for msg in std::mem::take(&mut rare.stash) {
                self.dead_letter(Envelope::Msg(msg), reason);
            }
        }
    }

    fn finish_stop(&self, inner: &mut Inner<A>) {
        self.call_quietly(inner, "post_stop", |actor, ctx| actor.post_stop(ctx));
        inner.actor = None;
        self.drop_stash(inner, DeadLetterReason::RecipientTerminated);
        inner.mode = Mode::Terminated;
        self.queues.terminate();
        for env in std::mem::take(&mut inner.ctx.batch) {
            self.dead_letter(
                env,
                crate::system::event_stream::DeadLetterReason::RecipientTerminated,
            );
        }
        self.drain_to_dead_letters();
        let me = inner.ctx.cell.any_ref();
        let mut parent_watches = false;
        if let Some(rare) = inner.ctx.rare.take() {
            let Rare {
                watching, watchers, ..
            } = *rare;
            for watcher in watchers {
                if self.parent.as_ref() == Some(&watcher) {
                    parent_watches = true;
                } else {
                    watcher.send_system(SystemMsg::DeathWatchNotification(self.uid));
                }
            }
            for (_, watched) in watching {
                watched.actor.send_system(SystemMsg::Unwatch(me.clone()));
            }
        }
        self.publish_lifecycle(LifecycleKind::Stopped);
        match &self.parent {
            Some(parent) => {
                // The parent frees the name before its own death notice
                // (as Akka notifies the parent first), so its handler of
                // `Terminated` can spawn a new child of that name.
                parent.send_system(SystemMsg::ChildTerminated(me));
                if parent_watches {
                    parent.send_system(SystemMsg::DeathWatchNotification(self.uid));
                }
            }
            None => self.system.root_terminated(),
        }
        // Closed only now: a `Watch` (the parent's too) that comes later
        // is answered after the parent has freed the name.
        for msg in self.queues.close_system() {
            answer_for_the_dead(self.uid, msg);
        }
    }

    /// Queues the `Terminated` behind the user messages already waiting,
    /// which may include the dead actor's last words to us.
    fn watched_terminated(&self, inner: &mut Inner<A>, uid: u64) {
        if inner
            .ctx
            .rare
            .as_ref()
            .is_some_and(|r| r.watching.contains_key(&uid))
        {
            if let Err(env) = self.queues.mailbox().push(Envelope::Terminated(uid)) {
                self.dead_letter(env, DeadLetterReason::MailboxOverflow);
            }
        }
    }

    /// Delivers a queued `Terminated`, exactly once: not if the watcher
    /// unwatched meanwhile.
    pub(super) fn deliver_terminated(&self, inner: &mut Inner<A>, uid: u64) {
        let Some(watched) = inner
            .ctx
            .rare
            .as_mut()
            .and_then(|r| r.watching.remove(&uid))
        else {
            return;
        };
        match watched.message {
            // An ordinary message by now: kept for `pre_restart` as any
            // other that `handle` gets.
            Some(msg) => self.call(inner, |actor, ctx, kept| {
                *kept = A::keep_for_restart(&msg);
                actor.handle(ctx, msg)
            }),
            None => {
                let signal = Terminated {
                    actor: watched.actor,
                };
                self.call(inner, |actor, ctx, _| actor.on_terminated(ctx, signal))
            }
        }
    }

    fn publish_lifecycle(&self, kind: LifecycleKind) {
        if let Some(metrics) = self.system.metrics() {
            metrics.lifecycle(kind);
        }
        let stream = self.system.event_stream();
        if stream.has_subscribers::<LifecycleEvent>() {
            stream.publish(LifecycleEvent {
                actor: self.path().to_string(),
                kind,
            });
        }
    }
}
