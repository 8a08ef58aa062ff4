//! One activation of a cell: system messages first, then up to `throughput`
//! user messages, then the hand-back of the `SCHEDULED` bit.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::queues::HandBack;
use super::{ActorCell, Inner, Mode};
use crate::actor::context::Context;
use crate::actor::definition::{Actor, DeathPact, HandleResult};
use crate::actor::mailbox::Envelope;
use crate::dispatcher::Runnable;
use crate::error::FailureKind;
use crate::util::panic::panic_text;

impl<A: Actor> Runnable for ActorCell<A> {
    fn run(self: Arc<Self>) -> usize {
        let mut guard = self.inner.lock();
        let Some(inner) = guard.as_mut() else {
            return 0;
        };
        let throughput = self.dispatcher.throughput();
        let deadline = self.dispatcher.deadline().map(|d| Instant::now() + d);
        if inner.mode == Mode::Created {
            self.start(inner);
        }
        self.process_system(inner);
        // Copies of the loop: only an actor with a receive timeout looks
        // at what each message is for it, and only a traced one opens a
        // span per message, so the others pay nothing for either.
        let handled = if inner.traced {
            self.handle_traced_batch(inner, throughput, deadline)
        } else if inner.ctx.receive_timeout.is_some() {
            self.handle_batch::<true, false>(inner, throughput, deadline)
        } else {
            self.handle_batch::<false, false>(inner, throughput, deadline)
        };
        if inner.mode == Mode::Terminated {
            // Dropping the inner state drops the context and with it the
            // cell's reference to itself.
            *guard = None;
            return handled;
        }
        let accepting = inner.mode == Mode::Running;
        // Looked at only when the actor is not running: no cost otherwise.
        let holding = !accepting && self.hold_while_backing_off(inner);
        self.batched.store(inner.ctx.batch.len(), Ordering::Relaxed);
        let batch_left = accepting && !inner.ctx.batch.is_empty();
        drop(guard);
        if batch_left {
            let d = self.dispatcher.clone();
            d.submit_yielded(self);
        } else {
            self.hand_back(accepting || holding);
        }
        handled
    }

    fn depth_sample(&self) -> usize {
        crate::actor::actor_ref::LocalTarget::mailbox_len(self)
    }
}

/// Whether handling `env` counts as activity for the receive timeout:
/// user and timer messages the actor does not exclude, and `Terminated`.
fn influences_receive_timeout<A: Actor>(env: &Envelope<A::Msg>) -> bool {
    match env {
        Envelope::Msg(msg) | Envelope::Timer { msg, .. } => A::influences_receive_timeout(msg),
        Envelope::Traced { msg, .. } => A::influences_receive_timeout(msg),
        Envelope::Terminated(_) => true,
        Envelope::Poison | Envelope::ReceiveTimeout(_) => false,
    }
}

impl<A: Actor> ActorCell<A> {
    /// Handles up to `throughput` user messages (system messages first
    /// whenever there are any); returns how many. With `TIMED`, a message
    /// that counts as activity for the receive timeout is noted as it is
    /// taken, before its handler runs: whatever the handler sends (a reply
    /// a test waits for before advancing a manual clock) comes after the
    /// note, and a signal later in the batch sees it. A timeout set while
    /// handling starts counting from its setting.
    #[inline(always)]
    fn handle_batch<const TIMED: bool, const TRACED: bool>(
        &self,
        inner: &mut Inner<A>,
        throughput: usize,
        deadline: Option<Instant>,
    ) -> usize {
        let mut handled = 0;
        while inner.mode == Mode::Running && handled < throughput {
            if self.queues.has_system() {
                self.process_system(inner);
                continue;
            }
            if inner.ctx.batch.is_empty() {
                self.queues.mailbox().take_all(&mut inner.ctx.batch);
                self.batched.store(inner.ctx.batch.len(), Ordering::Relaxed);
            }
            let Some(env) = inner.ctx.batch.pop_front() else {
                break;
            };
            if TIMED && influences_receive_timeout::<A>(&env) {
                if let Some(timeout) = inner.ctx.receive_timeout.as_mut() {
                    timeout.touch();
                }
            }
            if TRACED {
                let parent = match &env {
                    Envelope::Traced { parent, .. } => self
                        .queues
                        .mailbox()
                        .parents()
                        .and_then(|slots| slots.take(*parent)),
                    _ => None,
                };
                let span = crate::observability::trace_context::handler_span(
                    self.path(),
                    std::any::type_name::<A::Msg>(),
                    parent.as_ref(),
                    self.system.settings().tracing.propagator.as_ref(),
                );
                let _entered = span.enter();
                self.invoke(inner, env);
            } else {
                self.invoke(inner, env);
            }
            handled += 1;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        handled
    }

    /// The activation loop of a traced actor, kept out of line: it is the
    /// rare case.
    #[inline(never)]
    fn handle_traced_batch(
        &self,
        inner: &mut Inner<A>,
        throughput: usize,
        deadline: Option<Instant>,
    ) -> usize {
        if inner.ctx.receive_timeout.is_some() {
            self.handle_batch::<true, true>(inner, throughput, deadline)
        } else {
            self.handle_batch::<false, true>(inner, throughput, deadline)
        }
    }

    /// Ends the activation (see `queues` for the protocol).
    fn hand_back(self: Arc<Self>, accepting: bool) {
        match self.queues.hand_back(accepting) {
            HandBack::Idle => {}
            HandBack::Yield => {
                let d = self.dispatcher.clone();
                d.submit_yielded(self);
            }
            HandBack::Reacquired => {
                let d = self.dispatcher.clone();
                d.submit(self);
            }
        }
    }

    // Inlined into both copies of the activation loop, as it was into the
    // one loop before the copies: a call per message costs a copy of the
    // envelope and the call itself.
    #[inline(always)]
    fn invoke(&self, inner: &mut Inner<A>, env: Envelope<A::Msg>) {
        let msg = match env {
            Envelope::Msg(msg) => msg,
            // The context was taken by the traced loop (only a traced
            // mailbox makes these).
            Envelope::Traced { msg, .. } => msg,
            Envelope::Timer { msg, id } => {
                if !inner.ctx.rare.as_mut().is_some_and(|r| r.timers.accept(id)) {
                    return;
                }
                msg
            }
            Envelope::Poison => {
                self.begin_stop(inner);
                return;
            }
            Envelope::Terminated(uid) => {
                self.deliver_terminated(inner, uid);
                return;
            }
            Envelope::ReceiveTimeout(generation) => {
                self.receive_timeout_fired(inner, generation);
                return;
            }
        };
        // `keep_for_restart` is user code too: it runs under the handler's
        // `catch_unwind` rather than one of its own, so it costs nothing.
        self.call(inner, |actor, ctx, kept| {
            *kept = A::keep_for_restart(&msg);
            actor.handle(ctx, msg)
        });
    }

    /// The receive timeout's timer fired: signal the actor if it has been
    /// idle for the whole timeout.
    #[cold]
    fn receive_timeout_fired(&self, inner: &mut Inner<A>, generation: u64) {
        let me = inner.ctx.myself();
        let Some(timeout) = inner.ctx.receive_timeout.as_mut() else {
            return;
        };
        if let crate::time::receive_timeout::Fired::Signal = timeout.fired(generation, &me) {
            self.call(inner, |actor, ctx, _| actor.on_receive_timeout(ctx));
        }
    }

    /// Runs a fallible callback on the actor; a returned error or a panic
    /// becomes a failure for the supervisor. What the callback leaves in its
    /// third argument is kept for `pre_restart` (see `keep_for_restart`).
    /// Inlined into each caller: in the activation loop a call frame per
    /// message costs more than the panic guard itself.
    #[inline(always)]
    pub(super) fn call(
        &self,
        inner: &mut Inner<A>,
        f: impl FnOnce(&mut A, &mut Context<A>, &mut Option<A::Msg>) -> HandleResult,
    ) {
        let Some(actor) = inner.actor.as_mut() else {
            return;
        };
        let ctx = &mut inner.ctx;
        let mut kept = None;
        let outcome = catch_unwind(AssertUnwindSafe(|| f(actor, ctx, &mut kept)));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let kind = match e.downcast_ref::<DeathPact>() {
                    Some(pact) => FailureKind::DeathPact(pact.0.clone()),
                    None => FailureKind::Error(e),
                };
                self.fail(inner, kind, kept);
            }
            Err(payload) => self.fail(inner, FailureKind::Panic(panic_text(&*payload)), kept),
        }
        self.honour_stop_request(inner);
    }

    /// Runs an infallible callback (`post_stop`, `pre_restart`), logging a
    /// panic instead of escalating it: the actor is going away anyway, and
    /// Akka does the same (an exception in `preRestart` is published as an
    /// error and the restart goes on; one in `postStop` is published and the
    /// stop goes on).
    pub(super) fn call_quietly(
        &self,
        inner: &mut Inner<A>,
        what: &str,
        f: impl FnOnce(&mut A, &mut Context<A>),
    ) {
        let Some(actor) = inner.actor.as_mut() else {
            return;
        };
        let ctx = &mut inner.ctx;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| f(actor, ctx))) {
            tracing::error!(actor = %self.path(), "{what} panicked: {}", panic_text(&*payload));
        }
    }

    /// Looked at after every message: a read, and a write only when the
    /// flag is set (a `mem::take` stored `false` every time).
    pub(super) fn honour_stop_request(&self, inner: &mut Inner<A>) {
        if inner.ctx.stop_requested {
            inner.ctx.stop_requested = false;
            self.begin_stop(inner);
        }
    }
}
