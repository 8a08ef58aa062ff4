//! Message adapters (Akka Typed's `messageAdapter`): an `ActorRef<N>` that
//! turns each `N` into the actor's own protocol `M` and queues it in the
//! actor's mailbox, so an actor can take replies and events of other
//! protocols without widening its own.
//!
//! The adapter is a second target over the same cell: it has the actor's
//! path and uid (it compares equal to the actor's refs, and watching it
//! watches the actor), and everything but the message's type goes straight
//! through. The mapping runs on the sender's side, when the message is
//! sent, which keeps the actor's mailbox of one type and its hot path
//! untouched; Akka runs it in the receiving actor instead. A mapping that
//! panics costs the sender nothing: the panic is caught, logged, and the
//! message counted as a dead letter.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::actor::actor_ref::{ActorRef, LocalTarget, RefTarget, SystemTarget};
use crate::actor::mailbox::Envelope;
use crate::actor::path::ActorPath;
use crate::actor::system_msg::SystemMsg;
use crate::dispatcher::{Dispatcher, Runnable};
use crate::error::TellError;
use crate::system::actor_system::ActorSystem;
use crate::system::event_stream::DeadLetterReason;

type Mapping<N, M> = dyn Fn(N) -> M + Send + Sync;

/// The target behind an adapter ref: the actor's own target and the
/// mapping into its protocol.
pub(crate) struct Adapter<N, M: Send + 'static> {
    inner: ActorRef<M>,
    map: Box<Mapping<N, M>>,
}

impl<N: Send + 'static, M: Send + 'static> Adapter<N, M> {
    pub(crate) fn new_ref(
        inner: ActorRef<M>,
        map: impl Fn(N) -> M + Send + Sync + 'static,
    ) -> ActorRef<N> {
        ActorRef::from_target(Arc::new(Adapter {
            inner,
            map: Box::new(map),
        }))
    }

    /// `n` in the actor's protocol, or `None` (logged, counted) if the
    /// mapping panicked.
    fn adapt(&self, n: N) -> Option<M> {
        match catch_unwind(AssertUnwindSafe(|| (self.map)(n))) {
            Ok(m) => Some(m),
            Err(_) => {
                tracing::error!(
                    actor = %self.inner.path(),
                    from = std::any::type_name::<N>(),
                    "a message adapter's mapping panicked; the message is a dead letter"
                );
                self.inner.target_ref().system().dead_letter(
                    self.inner.path(),
                    std::any::type_name::<N>(),
                    DeadLetterReason::Undeliverable,
                );
                None
            }
        }
    }
}

impl<N: Send + 'static, M: Send + 'static> Runnable for Adapter<N, M> {
    fn run(self: Arc<Self>) -> usize {
        // Scheduling goes through whichever target the sender held: the
        // cell behind runs as if it had been submitted itself.
        self.inner.target_ref().clone().run()
    }
}

impl<N: Send + 'static, M: Send + 'static> SystemTarget for Adapter<N, M> {
    fn path(&self) -> &ActorPath {
        self.inner.path()
    }

    fn uid(&self) -> u64 {
        self.inner.target_ref().uid()
    }

    fn system(&self) -> &ActorSystem {
        self.inner.target_ref().system()
    }

    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher> {
        self.inner.target_ref().send_system(msg)
    }

    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    fn graceful_stop(&self) -> Option<&Dispatcher> {
        self.inner.target_ref().graceful_stop()
    }

    fn typed_ref(self: Arc<Self>, out: &mut dyn std::any::Any) {
        if let Some(slot) = out.downcast_mut::<Option<ActorRef<N>>>() {
            *slot = Some(ActorRef::from_target(self));
        }
    }

    fn message_type(&self) -> Option<std::any::TypeId> {
        Some(std::any::TypeId::of::<N>())
    }

    /// The actor's own: an adapter has the actor's queue and children.
    fn local(&self) -> Option<&dyn LocalTarget> {
        self.inner.target_ref().local()
    }
}

impl<N: Send + 'static, M: Send + 'static> RefTarget<N> for Adapter<N, M> {
    fn enqueue(&self, env: Envelope<N>) -> Option<&Dispatcher> {
        let env = match env {
            Envelope::Msg(n) => Envelope::Msg(self.adapt(n)?),
            Envelope::Timer { msg, id } => Envelope::Timer {
                msg: self.adapt(msg)?,
                id,
            },
            Envelope::Poison => Envelope::Poison,
            Envelope::Terminated(uid) => Envelope::Terminated(uid),
            Envelope::ReceiveTimeout(generation) => Envelope::ReceiveTimeout(generation),
            // Only a mailbox wraps a message with its span, after the
            // adapter has mapped it; should one reach here, the mapped
            // message is told in the current span again.
            Envelope::Traced { msg, .. } => Envelope::Msg(self.adapt(msg)?),
        };
        self.inner.target_ref().enqueue(env)
    }

    /// Never `Full`: the message is mapped before it meets the mailbox, so
    /// it could not be handed back; a full bounded mailbox applies its
    /// overflow rule instead (docs/reference/message-adapters.md).
    fn try_enqueue(&self, n: N) -> Result<Option<&Dispatcher>, TellError<N>> {
        if self.inner.is_terminated() {
            return Err(TellError::Terminated(n));
        }
        Ok(self.enqueue(Envelope::Msg(n)))
    }
}
