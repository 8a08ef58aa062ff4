//! The reply handle's target (Akka's PromiseActorRef) and the exchange it
//! shares with the waiting asker.
//!
//! The promise and the asker hold the exchange separately, so that the
//! promise is dropped when the last copy of the reply handle is: the asker
//! then learns that no reply can come (`Outcome::Dropped`) instead of
//! waiting for its timeout.

use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Waker;

use super::deadlines::{Expire, Expiry};
use crate::actor::actor_ref::{ActorRef, AnyRef, RefTarget, SystemTarget};
use crate::actor::mailbox::Envelope;
use crate::actor::path::ActorPath;
use crate::actor::system_msg::SystemMsg;
use crate::dispatcher::{Dispatcher, Runnable};
use crate::error::TellError;
use crate::system::actor_system::ActorSystem;
use crate::system::event_stream::DeadLetterReason;
use crate::util::locks::lock;
use crate::util::uid::next_uid;

/// How an exchange ended, as the asker sees it.
pub(super) enum Outcome<R> {
    Replied(R),
    /// Every copy of the reply handle was dropped without a reply.
    Dropped,
    /// The deadline passed (the system's sweeper ended it).
    TimedOut,
    /// The system terminated while the ask waited.
    SystemTerminated,
}

/// What the asker and the promise share.
pub(super) struct Exchange<R> {
    /// The reply handle's uid, which its watchers are told.
    uid: u64,
    /// False once the exchange has ended (it never waits again): set under
    /// the state's lock, read without it, so that asking whether the ask
    /// still waits, and the dropped promise's end after a reply, take no
    /// lock.
    waiting: AtomicBool,
    state: Mutex<State<R>>,
}

struct State<R> {
    phase: Phase<R>,
    /// The asker's waker, once it stopped polling in a loop.
    waker: Option<Waker>,
    /// Watchers of the reply handle, told when the exchange ends.
    watchers: Vec<AnyRef>,
    /// An exchange with nobody polling it (an actor's `ctx.ask`): the
    /// outcome is handed to this on whichever thread ends the exchange.
    sink: Option<Sink<R>>,
}

/// Where an exchange without a waiting future delivers its outcome.
pub(super) type Sink<R> = Box<dyn FnOnce(Outcome<R>) + Send>;

impl<R> State<R> {
    /// Takes the outcome if there is one, closing the exchange.
    fn take(&mut self) -> Option<Outcome<R>> {
        match std::mem::replace(&mut self.phase, Phase::Closed) {
            Phase::Ended(outcome) => Some(outcome),
            other => {
                self.phase = other;
                None
            }
        }
    }
}

enum Phase<R> {
    Waiting,
    Ended(Outcome<R>),
    /// The asker took the outcome, or stopped waiting (timed out, or its
    /// future was dropped).
    Closed,
}

impl<R> Exchange<R> {
    pub(super) fn new() -> Self {
        Exchange {
            uid: next_uid(),
            waiting: AtomicBool::new(true),
            state: Mutex::new(State {
                phase: Phase::Waiting,
                waker: None,
                watchers: Vec::new(),
                sink: None,
            }),
        }
    }

    /// From now on the exchange hands its outcome to `sink` when it ends,
    /// on the thread that ends it (the replier's, for a reply), instead of
    /// keeping it for a future; an outcome that is already there goes to
    /// `sink` at once. Replies to one actor's asks then arrive in the order
    /// they were sent.
    pub(super) fn set_sink(&self, sink: Sink<R>) {
        let outcome = {
            let mut state = lock(&self.state);
            match std::mem::replace(&mut state.phase, Phase::Closed) {
                Phase::Waiting => {
                    state.phase = Phase::Waiting;
                    state.sink = Some(sink);
                    return;
                }
                Phase::Ended(outcome) => outcome,
                Phase::Closed => return,
            }
        };
        sink(outcome);
    }

    /// The outcome, if there is one.
    pub(super) fn take(&self) -> Option<Outcome<R>> {
        lock(&self.state).take()
    }

    /// The outcome, or else `waker` is woken when there is one.
    pub(super) fn take_or_register(&self, waker: &Waker) -> Option<Outcome<R>> {
        let mut state = lock(&self.state);
        let outcome = state.take();
        if outcome.is_none() {
            match &state.waker {
                Some(w) if w.will_wake(waker) => {}
                _ => state.waker = Some(waker.clone()),
            }
        }
        outcome
    }

    /// The asker stopped waiting: a later reply is a dead letter, and the
    /// handle's watchers hear that it is done.
    pub(super) fn abandon(&self) {
        let watchers = {
            let mut state = lock(&self.state);
            state.phase = Phase::Closed;
            self.waiting.store(false, Ordering::Release);
            state.waker = None;
            std::mem::take(&mut state.watchers)
        };
        self.notify(watchers);
    }

    /// Ends the exchange with `outcome` unless it has ended; gives it back
    /// if it had.
    fn end(&self, outcome: Outcome<R>) -> Result<(), Outcome<R>> {
        let (waker, watchers, sink) = {
            let mut state = lock(&self.state);
            if !matches!(state.phase, Phase::Waiting) {
                return Err(outcome);
            }
            let sink = state.sink.take();
            state.phase = Phase::Closed;
            self.waiting.store(false, Ordering::Release);
            let outcome = match sink {
                // Delivered below, outside the lock.
                Some(sink) => Some((sink, outcome)),
                None => {
                    state.phase = Phase::Ended(outcome);
                    None
                }
            };
            (
                state.waker.take(),
                std::mem::take(&mut state.watchers),
                outcome,
            )
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        self.notify(watchers);
        if let Some((sink, outcome)) = sink {
            sink(outcome);
        }
        Ok(())
    }

    pub(super) fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::Acquire)
    }

    /// Adds a watcher, or tells it at once if the exchange has ended.
    fn watch(&self, watcher: AnyRef) {
        let mut state = lock(&self.state);
        if matches!(state.phase, Phase::Waiting) {
            state.watchers.push(watcher);
        } else {
            drop(state);
            watcher.send_system(SystemMsg::DeathWatchNotification(self.uid));
        }
    }

    /// Tells the handle's watchers that it is done. Nearly every ask has
    /// none: that check is inlined into `end` and `abandon`, the loop is not.
    #[inline]
    fn notify(&self, watchers: Vec<AnyRef>) {
        if !watchers.is_empty() {
            self.notify_watchers(watchers);
        }
    }

    #[inline(never)]
    fn notify_watchers(&self, watchers: Vec<AnyRef>) {
        for w in watchers {
            w.send_system(SystemMsg::DeathWatchNotification(self.uid));
        }
    }
}

impl<R: Send + 'static> Expire for Exchange<R> {
    fn expire(&self, why: Expiry) {
        let _ = self.end(match why {
            Expiry::TimedOut => Outcome::TimedOut,
            Expiry::SystemTerminated => Outcome::SystemTerminated,
        });
    }
}

/// The reply handle's target.
pub(super) struct Promise<R> {
    path: OnceLock<ActorPath>,
    /// The correlation id the remote transport named this handle by (0:
    /// none yet).
    correlation: AtomicU64,
    system: ActorSystem,
    exchange: Arc<Exchange<R>>,
}

impl<R: Send + 'static> Promise<R> {
    pub(super) fn new(system: ActorSystem, exchange: Arc<Exchange<R>>) -> Self {
        Promise {
            path: OnceLock::new(),
            correlation: AtomicU64::new(0),
            system,
            exchange,
        }
    }

    fn complete(&self, reply: R) {
        if self.exchange.end(Outcome::Replied(reply)).is_err() {
            self.system.dead_letter(
                SystemTarget::path(self),
                std::any::type_name::<R>(),
                DeadLetterReason::AskCompleted,
            );
        }
    }
}

impl<R> Drop for Promise<R> {
    fn drop(&mut self) {
        // The last copy of the handle is gone: no reply can come. After a
        // reply (the usual case) there is nothing to end, and no lock.
        if self.exchange.is_waiting() {
            let _ = self.exchange.end(Outcome::Dropped);
        }
    }
}

impl<R: Send + 'static> Runnable for Promise<R> {
    fn run(self: Arc<Self>) -> usize {
        0
    }
}

impl<R: Send + 'static> SystemTarget for Promise<R> {
    fn path(&self) -> &ActorPath {
        self.path
            .get_or_init(|| self.system.root_path().reply_handle(self.exchange.uid))
    }

    fn uid(&self) -> u64 {
        self.exchange.uid
    }

    fn system(&self) -> &ActorSystem {
        &self.system
    }

    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher> {
        if let SystemMsg::Watch(watcher) = msg {
            self.exchange.watch(watcher);
        }
        None
    }

    /// Done once answered, or once the asker stopped waiting (timed out).
    fn is_terminated(&self) -> bool {
        !self.exchange.is_waiting()
    }

    fn graceful_stop(&self) -> Option<&Dispatcher> {
        None
    }

    fn typed_ref(self: Arc<Self>, out: &mut dyn Any) {
        if let Some(slot) = out.downcast_mut::<Option<ActorRef<R>>>() {
            *slot = Some(ActorRef::from_target(self));
        }
    }

    fn message_type(&self) -> Option<TypeId> {
        Some(TypeId::of::<R>())
    }

    fn is_reply_handle(&self) -> bool {
        true
    }

    fn correlation_cell(&self) -> Option<&AtomicU64> {
        Some(&self.correlation)
    }
}

impl<R: Send + 'static> RefTarget<R> for Promise<R> {
    fn enqueue(&self, env: Envelope<R>) -> Option<&Dispatcher> {
        match env {
            Envelope::Msg(reply) | Envelope::Timer { msg: reply, .. } => self.complete(reply),
            Envelope::Traced { msg, .. } => self.complete(msg),
            Envelope::Poison | Envelope::Terminated(_) | Envelope::ReceiveTimeout(_) => {}
        }
        None
    }

    fn try_enqueue(&self, msg: R) -> Result<Option<&Dispatcher>, TellError<R>> {
        if self.is_terminated() {
            return Err(TellError::Terminated(msg));
        }
        self.complete(msg);
        Ok(None)
    }
}
