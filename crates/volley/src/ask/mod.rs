//! Request and reply.
//!
//! `ask` hands the request a [`ReplyTo`]: an ordinary `ActorRef<R>` backed
//! by a one-shot promise instead of a mailbox (Akka's PromiseActorRef), so a
//! reply handle can be stored, forwarded and, with remoting, sent over the
//! wire like any other ref. The first reply completes the ask; later replies,
//! and replies after the timeout, go to dead letters.
//!
//! Why the waiting is done by hand rather than with a oneshot channel and a
//! timer: most asks to a local actor are answered within microseconds, and
//! what used to dominate them was the machinery around the wait: a timer
//! registered on the system's runtime per ask, and a cross-thread wake-up
//! of the asking task (a futex call, several microseconds on a VM). Here an
//! ask to an actor on a pool first spins, looking for its reply, for a
//! short window (`Settings::ask_spin`), and an ask to an actor on the
//! asker's own runtime yields once, which lets that actor run; a reply that
//! comes by then completes the ask with no timer and no wake-up at all.
//! Only a slower reply makes the ask register its waker and its deadline.
//! A remote ask does so at once: its reply needs a network round trip.
//! (Yielding in a loop instead of spinning was tried: each self-wake made
//! tokio wake a sibling worker to steal the task.) The deadline is not a
//! timer of its own: the system's sweeper (`deadlines.rs`) times every
//! waiting ask, and a reply that comes first costs nothing more.

mod callback;
pub(crate) mod deadlines;
mod from_actor;
mod promise;
mod status;

pub(crate) use from_actor::ask_from_actor;
pub use status::{AskStatusError, StatusError, StatusReply};

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::actor::actor_ref::ActorRef;
use crate::dispatcher::Dispatcher;
use crate::error::TellError;
use crate::system::actor_system::ActorSystem;
use deadlines::{Expire, Ticket};
use promise::{Exchange, Outcome, Promise};

/// How an ask waits for its reply before it registers its waker and arms
/// its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AskWait {
    /// At once (a remote actor: the reply needs a network round trip).
    Park,
    /// Spins, looking for the reply, for up to `ask_spin` (an actor on
    /// a pool, which answers from another thread).
    Spin,
    /// Yields to the executor once first (an actor on the asker's runtime,
    /// which runs when the asker yields).
    YieldOnce,
}

impl AskWait {
    /// How an `ask` to a target run by `dispatcher` waits: a pool answers
    /// from another thread, often within a microsecond, so the asker spins;
    /// an actor on a runtime runs on the asker's own thread once the asker
    /// yields; a target no dispatcher runs (a remote actor) is not worth
    /// waiting for before parking.
    #[inline]
    pub(crate) fn of(dispatcher: Option<&Dispatcher>) -> Self {
        match dispatcher {
            None => AskWait::Park,
            Some(d) if d.runs_on_runtime() => AskWait::YieldOnce,
            Some(_) => AskWait::Spin,
        }
    }
}

/// The reply handle an `ask` puts into its request: an actor ref that
/// accepts exactly one reply.
pub type ReplyTo<R> = ActorRef<R>;

/// Why an `ask` produced no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// No reply within the timeout.
    #[error("ask to {target} timed out after {after:?}")]
    Timeout {
        /// The asked actor's path.
        target: String,
        /// The timeout.
        after: Duration,
    },
    /// The asked actor had already terminated.
    #[error("ask to {0} failed: the actor has terminated")]
    RecipientTerminated(String),
    /// Every copy of the reply handle was dropped without a reply: the
    /// request went to dead letters, or the recipient discarded it.
    #[error("ask to {0} got no reply: the reply handle was dropped")]
    ReplyDropped(String),
    /// The actor system is shut down.
    #[error("ask failed: the actor system has terminated")]
    SystemTerminated,
    /// [`ActorRef::try_ask`] found the actor's bounded mailbox full; the
    /// request was not sent.
    #[error("ask to {0} refused: its mailbox is full")]
    MailboxFull(String),
}

/// Sends `make(reply_to)` to `target` and waits for the reply or the timeout.
/// `WAIT_FOR_ROOM`: a full bounded mailbox makes the ask wait for room
/// (within its timeout), or fails it at once with `MailboxFull`.
pub(crate) async fn ask<const WAIT_FOR_ROOM: bool, M: Send + 'static, R: Send + 'static>(
    target: &ActorRef<M>,
    system: &ActorSystem,
    make: impl FnOnce(ReplyTo<R>) -> M,
    timeout: Duration,
) -> Result<R, AskError> {
    if target.is_terminated() {
        return Err(AskError::RecipientTerminated(target.path().to_string()));
    }
    if system.is_terminated() {
        return Err(AskError::SystemTerminated);
    }
    let started = Instant::now();
    let exchange = Arc::new(Exchange::new());
    let request = make(ActorRef::from_target(Arc::new(Promise::new(
        system.clone(),
        exchange.clone(),
    ))));
    // From here on, however this future ends (reply, timeout, or dropped by
    // its caller), the guard tells the promise nobody waits any more.
    let waiting = Waiting(exchange, AtomicBool::new(false));
    let wait = AskWait::of(target.dispatcher());
    // An actor on the asker's runtime that the request wakes on this
    // thread runs here and now (`capture_woken`), within the task's
    // cooperative budget, so that a task asking in a loop still yields
    // now and then.
    let inline = wait == AskWait::YieldOnce
        && !crate::dispatcher::batch_end::on_worker()
        && tokio::task::coop::has_budget_remaining();
    let (sent, woken) = if inline {
        crate::dispatcher::capture_woken(|| target.try_tell(request))
    } else {
        (target.try_tell(request), None)
    };
    let ran_inline = woken.is_some();
    if let Some(activation) = woken {
        crate::dispatcher::run_captured(activation);
    }
    // A full bounded mailbox, or a remote lane at its outbound limit, makes
    // the ask wait for room (inside its timeout) as `send().await` does,
    // instead of dropping the request, which would fail the ask at once with
    // nothing to say why. Everything else goes the way of `tell`: a
    // terminated recipient's dead letter, a router's routing error.
    match sent {
        Ok(()) => {}
        Err(TellError::Full(_)) if !WAIT_FOR_ROOM => {
            return Err(AskError::MailboxFull(target.path().to_string()));
        }
        Err(TellError::Full(request)) => {
            let Some(sleep) = system.sleep(timeout) else {
                return Err(AskError::SystemTerminated);
            };
            tokio::select! {
                sent = target.send(request) => if let Err(e) = sent {
                    target.tell(e.into_inner());
                },
                _ = sleep => return Err(timed_out(system, target, timeout)),
            }
        }
        Err(TellError::Terminated(request)) => target.tell(request),
    }
    let spin = system.settings().ask_spin;
    let wait = match wait {
        AskWait::Spin if spin.is_zero() => AskWait::Park,
        wait => wait,
    };
    let reply = ReplyWait {
        waiting: &waiting,
        system,
        wait,
        spin_until: started + spin,
        // `Duration::MAX` waits for ever in practice instead of overflowing.
        deadline: crate::time::clock::saturating_add(started, timeout),
        no_time_left: timeout.is_zero(),
        deadline_entry: None,
        ran_inline,
    };
    match reply.await {
        Ended::Outcome(Outcome::Replied(reply)) => Ok(reply),
        Ended::Outcome(Outcome::Dropped) => Err(AskError::ReplyDropped(target.path().to_string())),
        Ended::Outcome(Outcome::TimedOut) | Ended::TimedOut => {
            Err(timed_out(system, target, timeout))
        }
        Ended::Outcome(Outcome::SystemTerminated) | Ended::SystemTerminated => {
            Err(AskError::SystemTerminated)
        }
    }
}

fn timed_out<M: Send + 'static>(
    system: &ActorSystem,
    target: &ActorRef<M>,
    after: Duration,
) -> AskError {
    if let Some(metrics) = system.metrics() {
        metrics.ask_timeout();
    }
    AskError::Timeout {
        target: target.path().to_string(),
        after,
    }
}

/// The asker's side of the exchange; abandons it when dropped, unless the
/// asker took its outcome (which closed it: no second lock needed).
struct Waiting<R>(Arc<Exchange<R>>, AtomicBool);

impl<R> Waiting<R> {
    fn took(&self, outcome: Outcome<R>) -> Poll<Ended<R>> {
        self.1.store(true, Ordering::Relaxed);
        Poll::Ready(Ended::Outcome(outcome))
    }
}

impl<R> Drop for Waiting<R> {
    fn drop(&mut self) {
        if !*self.1.get_mut() {
            self.0.abandon();
        }
    }
}

/// How the wait for a reply ended.
enum Ended<R> {
    Outcome(Outcome<R>),
    /// The deadline had passed when the ask was about to wait.
    TimedOut,
    /// The system had terminated when the ask was about to wait.
    SystemTerminated,
}

/// Resolves with the outcome, or at the deadline.
struct ReplyWait<'a, R> {
    waiting: &'a Waiting<R>,
    system: &'a ActorSystem,
    /// What to do before registering; `Park` once done.
    wait: AskWait,
    spin_until: Instant,
    deadline: Instant,
    /// A zero timeout: the ask ends as soon as it would wait.
    no_time_left: bool,
    /// The deadline is with the system's sweeper, in this entry: handed
    /// back when the wait ends (see `Drop`).
    deadline_entry: Option<Ticket>,
    /// The asked actor ran in this task: one unit of its budget is due.
    ran_inline: bool,
}

impl<R: Send + 'static> Future for ReplyWait<'_, R> {
    type Output = Ended<R>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let exchange = &this.waiting.0;
        match std::mem::replace(&mut this.wait, AskWait::Park) {
            AskWait::Park => {}
            AskWait::Spin => {
                let mut spins = 0u32;
                loop {
                    if let Some(outcome) = exchange.take() {
                        return this.waiting.took(outcome);
                    }
                    spins += 1;
                    if spins % 16 == 0 && Instant::now() >= this.spin_until {
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
            AskWait::YieldOnce => {
                if std::mem::take(&mut this.ran_inline) {
                    if let Poll::Ready(coop) = tokio::task::coop::poll_proceed(cx) {
                        coop.made_progress();
                    }
                }
                if let Some(outcome) = exchange.take() {
                    return this.waiting.took(outcome);
                }
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
        if let Some(outcome) = exchange.take_or_register(cx.waker()) {
            return this.waiting.took(outcome);
        }
        if this.deadline_entry.is_none() {
            // A zero timeout needs no sweeper. (One spent waiting for
            // room ends at the sweeper's next look, within a tick.)
            if this.no_time_left {
                return Poll::Ready(Ended::TimedOut);
            }
            let weak: Weak<Exchange<R>> = Arc::downgrade(exchange);
            let weak: Weak<dyn Expire> = weak;
            let Some(entry) = this.system.expire_at(this.deadline, weak) else {
                // The system is gone: nothing will answer.
                return Poll::Ready(Ended::SystemTerminated);
            };
            this.deadline_entry = Some(entry);
        }
        Poll::Pending
    }
}

impl<R> Drop for ReplyWait<'_, R> {
    /// However the wait ends (reply, timeout, or the caller dropped the
    /// ask), the sweeper's entry goes now, and with it the last weak
    /// reference to the exchange: its memory is freed when the asker's
    /// side is dropped, right after this, not at a later scan.
    fn drop(&mut self) {
        if let Some(entry) = self.deadline_entry.take() {
            self.system.cancel_expiry(entry);
        }
    }
}
