//! An actor's ask (`Context::ask`): the outcome arrives in the asking
//! actor's mailbox, mapped to its own message.
//!
//! Why not `ActorRef::ask` run in a task and piped back: each ask then
//! waited in a task of its own, and tasks finish in any order, so the
//! replies to several asks (and even the requests, sent from those tasks)
//! lost the order the asks were made in, which Akka keeps. Here the
//! request is sent from the handler, and the reply handle's exchange has
//! no waiting future: its outcome is mapped and told to the asking actor
//! on the thread that ends the exchange, the replier's for a reply, so
//! one replier's replies arrive in the order it sent them. The timeout is
//! an entry in the system's deadline table, like any waiting ask's.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::deadlines::{Expire, Expiry};
use super::promise::{Exchange, Outcome, Promise, Sink};
use super::{timed_out, AskError};
use crate::actor::actor_ref::ActorRef;
use crate::error::TellError;
use crate::system::actor_system::ActorSystem;

/// Sends `make(reply_to)` to `target` now, and tells `me` the mapped
/// outcome when it comes (reply, timeout, dropped handle).
pub(crate) fn ask_from_actor<N, R, M>(
    system: &ActorSystem,
    me: ActorRef<M>,
    target: &ActorRef<N>,
    make: impl FnOnce(ActorRef<R>) -> N,
    timeout: Duration,
    map: impl FnOnce(Result<R, AskError>) -> M + Send + 'static,
) where
    N: Send + 'static,
    R: Send + 'static,
    M: Send + 'static,
{
    if target.is_terminated() {
        let gone = AskError::RecipientTerminated(target.path().to_string());
        return deliver(&me, map, Err(gone));
    }
    let asked = target.clone();
    let stats = system.clone();
    let sink: Sink<R> = Box::new(move |outcome| {
        let result = match outcome {
            Outcome::Replied(reply) => Ok(reply),
            Outcome::Dropped => Err(AskError::ReplyDropped(asked.path().to_string())),
            Outcome::TimedOut => Err(timed_out(&stats, &asked, timeout)),
            Outcome::SystemTerminated => Err(AskError::SystemTerminated),
        };
        deliver(&me, map, result);
    });
    let exchange = Arc::new(Exchange::new());
    let reply_to = ActorRef::from_target(Arc::new(Promise::new(system.clone(), exchange.clone())));
    // In the handler, as Akka builds the request: a panic here fails the
    // asking actor, and (no sink yet) the dropped handle tells it nothing.
    let request = make(reply_to);
    exchange.set_sink(sink);
    match target.try_tell(request) {
        Ok(()) => {}
        Err(TellError::Full(request)) => wait_for_room(system, target, request, &exchange, timeout),
        // A dead letter; the handle goes with it, which ends the ask.
        Err(TellError::Terminated(request)) => target.tell(request),
    }
    let weak: Weak<Exchange<R>> = Arc::downgrade(&exchange);
    let weak: Weak<dyn Expire> = weak;
    let deadline = crate::time::clock::saturating_add(Instant::now(), timeout);
    // No future to hand the entry back: a later scan drops it.
    if system.expire_at(deadline, weak).is_none() {
        exchange.expire(Expiry::SystemTerminated);
    }
}

/// A full bounded mailbox: the request waits for room in a task, as
/// `ActorRef::ask`'s does, until the timeout, which then ends the ask.
pub(super) fn wait_for_room<N: Send + 'static, R: Send + 'static>(
    system: &ActorSystem,
    target: &ActorRef<N>,
    request: N,
    exchange: &Arc<Exchange<R>>,
    timeout: Duration,
) {
    let Some(sleep) = system.sleep(timeout) else {
        return exchange.expire(Expiry::SystemTerminated);
    };
    let (target, exchange) = (target.clone(), exchange.clone());
    drop(system.runtime_handle().spawn(async move {
        tokio::select! {
            sent = target.send(request) => if let Err(e) = sent {
                target.tell(e.into_inner());
            },
            _ = sleep => exchange.expire(Expiry::TimedOut),
        }
    }));
}

/// Tells `me` `map(result)`; a panicking `map` is logged (it runs outside
/// the actor, on the replier's thread or the system's).
fn deliver<R, M: Send + 'static>(
    me: &ActorRef<M>,
    map: impl FnOnce(Result<R, AskError>) -> M,
    result: Result<R, AskError>,
) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| map(result))) {
        Ok(msg) => me.tell(msg),
        Err(payload) => tracing::error!(
            actor = %me.path(),
            "ctx.ask's mapping panicked; its message is not sent: {}",
            crate::util::panic::panic_text(&*payload)
        ),
    }
}
