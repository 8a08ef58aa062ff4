//! Request and reply.
//!
//! `ask` hands the request a [`ReplyTo`]: an ordinary `ActorRef<R>` backed
//! by a one-shot promise instead of a mailbox (Akka's PromiseActorRef), so a
//! reply handle can be stored, forwarded and, with remoting, sent over the
//! wire like any other ref. The first reply completes the ask; later replies,
//! and replies after the timeout, go to dead letters.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::actor_ref::{ActorRef, AnyRef, RefTarget, SystemTarget};
use crate::cell::next_uid;
use crate::dispatcher::{Dispatcher, Runnable};
use crate::error::TellError;
use crate::event_stream::DeadLetterReason;
use crate::locks::lock;
use crate::mailbox::Envelope;
use crate::path::ActorPath;
use crate::system::ActorSystem;
use crate::system_msg::SystemMsg;

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
}

struct Promise<R> {
    uid: u64,
    path: OnceLock<ActorPath>,
    system: ActorSystem,
    slot: Mutex<PromiseSlot<R>>,
}

struct PromiseSlot<R> {
    sender: Option<oneshot::Sender<R>>,
    watchers: Vec<AnyRef>,
}

/// Sends `make(reply_to)` to `target` and waits for the reply or the timeout.
pub(crate) async fn ask<M: Send + 'static, R: Send + 'static>(
    target: &ActorRef<M>,
    system: &ActorSystem,
    make: impl FnOnce(ReplyTo<R>) -> M,
    timeout: Duration,
) -> Result<R, AskError> {
    if target.is_terminated() {
        return Err(AskError::RecipientTerminated(target.path().to_string()));
    }
    let Some(sleep) = system.sleep(timeout) else {
        return Err(AskError::SystemTerminated);
    };
    let (sender, receiver) = oneshot::channel();
    let promise = Arc::new(Promise {
        uid: next_uid(),
        path: OnceLock::new(),
        system: system.clone(),
        slot: Mutex::new(PromiseSlot {
            sender: Some(sender),
            watchers: Vec::new(),
        }),
    });
    let request = make(ActorRef::from_target(promise));
    // A full bounded mailbox, or a remote lane at its outbound limit, makes
    // the ask wait for room (inside its timeout) as `send().await` does,
    // instead of dropping the request, which would fail the ask at once with
    // nothing to say why. Everything else goes the way of `tell`: a
    // terminated recipient's dead letter, a router's routing error.
    let backlog = match target.try_tell(request) {
        Ok(()) => None,
        Err(TellError::Full(request)) => Some(request),
        Err(TellError::Terminated(request)) => {
            target.tell(request);
            None
        }
    };
    let exchange = async {
        if let Some(request) = backlog {
            if let Err(e) = target.send(request).await {
                target.tell(e.into_inner());
            }
        }
        receiver
            .await
            .map_err(|_| AskError::ReplyDropped(target.path().to_string()))
    };
    tokio::select! {
        reply = exchange => reply,
        _ = sleep => Err(AskError::Timeout { target: target.path().to_string(), after: timeout }),
    }
}

impl<R: Send + 'static> Promise<R> {
    fn complete(&self, reply: R) {
        let (sender, watchers) = {
            let mut slot = lock(&self.slot);
            (slot.sender.take(), std::mem::take(&mut slot.watchers))
        };
        let delivered = match sender {
            Some(s) => s.send(reply).is_ok(),
            None => false,
        };
        if !delivered {
            self.system.dead_letter(
                SystemTarget::path(self),
                std::any::type_name::<R>(),
                DeadLetterReason::AskCompleted,
            );
        }
        for w in watchers {
            w.send_system(SystemMsg::DeathWatchNotification(self.uid));
        }
    }
}

impl<R: Send + 'static> Runnable for Promise<R> {
    fn run(self: Arc<Self>) {}
}

impl<R: Send + 'static> SystemTarget for Promise<R> {
    fn path(&self) -> &ActorPath {
        self.path
            .get_or_init(|| self.system.root_path().reply_handle(self.uid))
    }

    fn uid(&self) -> u64 {
        self.uid
    }

    fn system(&self) -> &ActorSystem {
        &self.system
    }

    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher> {
        if let SystemMsg::Watch(watcher) = msg {
            let mut slot = lock(&self.slot);
            if slot.sender.is_some() {
                slot.watchers.push(watcher);
            } else {
                drop(slot);
                watcher.send_system(SystemMsg::DeathWatchNotification(self.uid));
            }
        }
        None
    }

    /// Done once answered, or once the asker stopped waiting (timed out).
    fn is_terminated(&self) -> bool {
        lock(&self.slot)
            .sender
            .as_ref()
            .is_none_or(|s| s.is_closed())
    }

    fn mailbox_len(&self) -> usize {
        0
    }

    fn graceful_stop(&self) -> Option<&Dispatcher> {
        None
    }

    fn typed_ref(self: Arc<Self>) -> Option<Box<dyn Any + Send>> {
        Some(Box::new(ActorRef::<R>::from_target(self)))
    }

    fn message_type(&self) -> Option<TypeId> {
        Some(TypeId::of::<R>())
    }

    fn is_reply_handle(&self) -> bool {
        true
    }

    fn lookup_child(&self, _name: &str) -> Option<AnyRef> {
        None
    }
}

impl<R: Send + 'static> RefTarget<R> for Promise<R> {
    fn enqueue(&self, env: Envelope<R>) -> Option<&Dispatcher> {
        match env {
            Envelope::Msg(reply) | Envelope::Timer { msg: reply, .. } => self.complete(reply),
            Envelope::Poison | Envelope::Terminated(_) => {}
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
