//! The child's side of a backoff restart: `pre_restart` has run, and the
//! cell waits out the delay before creating the new instance.
//!
//! While it waits the cell handles no user messages. It takes what arrives
//! into its batch (which the new instance handles first, in order) up to
//! the strategy's bound, and sends the rest to dead letters: the bound is
//! the parent's strategy's, not the mailbox's, so a child with an unbounded
//! mailbox does not pile up messages for a long backoff. Only an activation
//! that finds the actor not running looks at this, so a running actor pays
//! nothing for it.

use std::fmt;
use std::sync::Arc;

use super::{ActorCell, Inner, Mode};
use crate::actor::definition::Actor;
use crate::actor::mailbox::Envelope;
use crate::actor::system_msg::SystemMsg;
use crate::error::Failure;
use crate::supervision::backoff::BackoffRestart;
use crate::system::event_stream::DeadLetterReason;
use crate::time::clock::TimerHandle;
use crate::util::locks::lock;

/// A cell waiting out a backoff.
pub(crate) struct Waiting {
    failure: Arc<Failure>,
    stash_capacity: usize,
    timer: TimerHandle,
}

impl fmt::Debug for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiting")
            .field("failure", &self.failure)
            .field("stash_capacity", &self.stash_capacity)
            .finish_non_exhaustive()
    }
}

impl<A: Actor> ActorCell<A> {
    /// Arms the delay; the new instance is created when it fires.
    pub(super) fn wait_for_backoff(&self, inner: &mut Inner<A>, restart: &BackoffRestart) {
        // Weak: a timer must not keep a stopped actor's cell alive for the
        // rest of a long backoff.
        let cell = Arc::downgrade(&inner.ctx.cell);
        let timer = self.system.timer_driver().after(restart.delay, move || {
            if let Some(cell) = cell.upgrade() {
                cell.any_ref().send_system(SystemMsg::BackoffElapsed);
            }
        });
        tracing::debug!(actor = %self.path(), delay = ?restart.delay, "restarting after a backoff");
        // What the failed instance had taken from the mailbox, and what it
        // stashed, count against the bound as well.
        for env in std::mem::take(&mut inner.ctx.batch) {
            self.hold(inner, env, restart.stash_capacity);
        }
        inner.mode = Mode::BackingOff(Arc::new(Waiting {
            failure: restart.failure.clone(),
            stash_capacity: restart.stash_capacity,
            timer,
        }));
    }

    /// The delay has passed: create the new instance, once the children
    /// being stopped have terminated.
    pub(super) fn backoff_elapsed(&self, inner: &mut Inner<A>) {
        let Mode::BackingOff(waiting) = &inner.mode else {
            return;
        };
        let failure = waiting.failure.clone();
        if lock(&self.children).any_stopping() {
            inner.mode = Mode::Recreating(failure);
        } else {
            self.finish_restart(inner, failure);
        }
    }

    /// A stop while waiting: the delay will not be needed.
    pub(super) fn cancel_backoff(&self, inner: &Inner<A>) {
        if let Mode::BackingOff(waiting) = &inner.mode {
            waiting.timer.cancel();
        }
    }

    /// At the end of an activation of an actor that is not running: if it
    /// waits out a backoff, moves what arrived into the batch up to the
    /// bound, dead-lettering the rest. True if it waits, so that the next
    /// message wakes it again.
    #[cold]
    pub(super) fn hold_while_backing_off(&self, inner: &mut Inner<A>) -> bool {
        let Mode::BackingOff(waiting) = &inner.mode else {
            return false;
        };
        let capacity = waiting.stash_capacity;
        while let Some(env) = self.queues.mailbox().pop() {
            self.hold(inner, env, capacity);
        }
        true
    }

    fn hold(&self, inner: &mut Inner<A>, env: Envelope<A::Msg>, capacity: usize) {
        // Only user messages overflow: a graceful stop or a `Terminated`
        // must reach the new instance.
        if matches!(env, Envelope::Msg(_) | Envelope::Traced { .. })
            && inner.ctx.batch.len() >= capacity
        {
            self.dead_letter(env, DeadLetterReason::BackoffOverflow);
        } else {
            inner.ctx.batch.push_back(env);
        }
    }
}
