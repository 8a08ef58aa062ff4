//! Ask with a callback ([`ActorRef::ask_then`], [`ActorRef::try_ask_then`]):
//! the outcome goes to a function instead of a future.
//!
//! Why: a server that answers each request where its answer comes (the web
//! gateway queues it for its client) would otherwise spawn a task per ask
//! only to await the ask's future, and pay for the task, its waker and its
//! wake-up on every request. Here the reply handle's exchange has no
//! waiting future, as a `Context::ask`'s has none: its outcome is handed to
//! the callback on the thread that ends the exchange (the replier's for a
//! reply, the deadline sweeper's for a timeout, the thread that drops the
//! last copy of the reply handle for a dropped one). The timeout is an
//! entry in the system's deadline table, like any waiting ask's, and is
//! not registered at all when the reply came before `ask_then` returned.
//!
//! What the future form does and this one does too: an actor on the
//! caller's runtime that the request wakes runs at once on the caller's
//! thread (`capture_woken`), so its reply often comes before the call
//! returns; a full bounded mailbox waits for room (`ask_then`) or fails
//! with `MailboxFull` (`try_ask_then`). What it does not do: spin for a
//! reply from a pool, since nothing waits.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::deadlines::{Expire, Expiry};
use super::from_actor::wait_for_room;
use super::promise::{Exchange, Outcome, Promise, Sink};
use super::{timed_out, AskError, AskWait, ReplyTo};
use crate::actor::actor_ref::ActorRef;
use crate::error::TellError;

impl<M: Send + 'static> ActorRef<M> {
    /// Request and reply with a callback: sends `make(reply_to)` now and
    /// calls `then` once, with the first reply or with the error that
    /// [`ActorRef::ask`] would give (timeout, terminated recipient, reply
    /// handle dropped, system terminated). No task and no future: `then`
    /// runs on the thread that ends the ask, which is the replier's for a
    /// reply (inside its handler's `reply_to.tell`), the system's timer
    /// for a timeout, or the caller's, before `ask_then` returns, when the
    /// outcome is known at once (a terminated recipient, or an actor on
    /// the caller's runtime that ran and replied at once). So `then`
    /// should be short and must not block; a panic in it is caught and
    /// logged at error, and does not fail the replier.
    ///
    /// A full bounded mailbox makes the request wait for room within the
    /// timeout, as `ask` does (in a task only then).
    pub fn ask_then<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
        then: impl FnOnce(Result<R, AskError>) + Send + 'static,
    ) {
        ask_with_callback::<true, M, R>(self, make, timeout, then);
    }

    /// Like [`ActorRef::ask_then`], but a full bounded mailbox calls
    /// `then` at once with [`AskError::MailboxFull`] and drops the request
    /// unsent, as [`ActorRef::try_ask`] does.
    pub fn try_ask_then<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
        then: impl FnOnce(Result<R, AskError>) + Send + 'static,
    ) {
        ask_with_callback::<false, M, R>(self, make, timeout, then);
    }
}

/// Sends `make(reply_to)` to `target` and hands the outcome to `then`.
fn ask_with_callback<const WAIT_FOR_ROOM: bool, M: Send + 'static, R: Send + 'static>(
    target: &ActorRef<M>,
    make: impl FnOnce(ReplyTo<R>) -> M,
    timeout: Duration,
    then: impl FnOnce(Result<R, AskError>) + Send + 'static,
) {
    let system = target.system();
    if target.is_terminated() {
        let gone = AskError::RecipientTerminated(target.path().to_string());
        return call(target, then, Err(gone));
    }
    if system.is_terminated() {
        return call(target, then, Err(AskError::SystemTerminated));
    }
    let started = Instant::now();
    let exchange = Arc::new(Exchange::new());
    let request = make(ActorRef::from_target(Arc::new(Promise::new(
        system.clone(),
        exchange.clone(),
    ))));
    let (sent, woken) = tell_capturing(target, request);
    match sent {
        Ok(()) => {}
        Err(TellError::Full(request)) if !WAIT_FOR_ROOM => {
            // Closed first, so that dropping the request's handle ends
            // nothing: the callback hears why the ask failed.
            exchange.abandon();
            drop(request);
            let full = AskError::MailboxFull(target.path().to_string());
            return call(target, then, Err(full));
        }
        Err(TellError::Full(request)) => wait_for_room(system, target, request, &exchange, timeout),
        // A dead letter; the handle goes with it, which ends the ask.
        Err(TellError::Terminated(request)) => target.tell(request),
    }
    // Set after the send: an outcome that came meanwhile is delivered here
    // and now. Either way one asker's callbacks for one replier's replies
    // run in the order of the replies.
    exchange.set_sink(sink(target, timeout, then));
    if let Some(activation) = woken {
        crate::dispatcher::run_captured(activation);
    }
    if !exchange.is_waiting() {
        return;
    }
    let weak: Weak<Exchange<R>> = Arc::downgrade(&exchange);
    let weak: Weak<dyn Expire> = weak;
    let deadline = crate::time::clock::saturating_add(started, timeout);
    // No future to hand the entry back: a later scan drops it.
    if system.expire_at(deadline, weak).is_none() {
        exchange.expire(Expiry::SystemTerminated);
    }
}

/// Tells `request`; an actor on the caller's runtime that this wakes is
/// kept, for the caller to run on this thread (as `ask`'s first poll does)
/// once the reply has somewhere to go.
fn tell_capturing<M: Send + 'static>(
    target: &ActorRef<M>,
    request: M,
) -> (Result<(), TellError<M>>, Option<crate::dispatcher::Task>) {
    let inline = AskWait::of(target.dispatcher()) == AskWait::YieldOnce
        && !crate::dispatcher::batch_end::on_worker()
        && tokio::task::coop::has_budget_remaining();
    if inline {
        crate::dispatcher::capture_woken(|| target.try_tell(request))
    } else {
        (target.try_tell(request), None)
    }
}

/// The exchange's sink: maps the outcome to the ask's result for `then`.
fn sink<M: Send + 'static, R: Send + 'static>(
    target: &ActorRef<M>,
    timeout: Duration,
    then: impl FnOnce(Result<R, AskError>) + Send + 'static,
) -> Sink<R> {
    let asked = target.clone();
    Box::new(move |outcome| {
        let result = match outcome {
            Outcome::Replied(reply) => Ok(reply),
            Outcome::Dropped => Err(AskError::ReplyDropped(asked.path().to_string())),
            Outcome::TimedOut => Err(timed_out(asked.system(), &asked, timeout)),
            Outcome::SystemTerminated => Err(AskError::SystemTerminated),
        };
        call(&asked, then, result);
    })
}

/// Runs `then`; a panic in it is logged, not passed on to the thread that
/// ended the ask (a replier's handler, the system's timer).
fn call<M: Send + 'static, R>(
    asked: &ActorRef<M>,
    then: impl FnOnce(Result<R, AskError>),
    result: Result<R, AskError>,
) {
    let run = std::panic::AssertUnwindSafe(|| then(result));
    if let Err(payload) = std::panic::catch_unwind(run) {
        tracing::error!(
            target_actor = %asked.path(),
            "an ask_then callback panicked: {}",
            crate::util::panic::panic_text(&*payload)
        );
    }
}
