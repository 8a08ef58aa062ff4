//! Hooks that let a transport (crate `volley-remote`) put remote actors
//! behind the ordinary [`ActorRef`] type.
//!
//! A [`RemoteRef`] is one remote actor's identity plus the transport that
//! reaches it. It accepts messages of *any* type: `ActorRef<M>` for a remote
//! actor is the same `Arc<RemoteRef>` seen through `M`, and the transport
//! serializes the message by its registered type (an unregistered type is an
//! error at the sender, reported as a dead letter or returned by `try_tell`).
//! `ActorRef`s inside messages are written as small integers through the
//! per-connection tables in [`wire_refs`].

pub mod wire_refs;

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};

use crate::actor_ref::{ActorRef, AnyRef, RefTarget, SystemTarget};
use crate::dispatcher::{Dispatcher, Runnable};
use crate::error::TellError;
use crate::event_stream::DeadLetterReason;
use crate::mailbox::Envelope;
use crate::path::ActorPath;
use crate::system::ActorSystem;
use crate::system_msg::SystemMsg;

/// Why a transport could not take a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteSendError {
    /// The association's outbound queue is at its limit (backpressure).
    #[error("outbound queue to {0} is full")]
    QueueFull(String),
    /// The message type has no wire id registered.
    #[error("message type {0} is not registered for remoting")]
    Unregistered(&'static str),
    /// The encoded message is larger than the largest frame allowed.
    #[error("message of {size} bytes exceeds the maximum frame size of {limit} bytes")]
    TooLarge {
        /// Encoded size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Serialization failed.
    #[error("cannot serialize message: {0}")]
    Serialize(String),
    /// The transport is shut down or the peer is quarantined.
    #[error("remote transport unavailable: {0}")]
    Unavailable(String),
}

/// What a transport implements to carry messages to remote actors.
pub trait RemoteTransport: Send + Sync + 'static {
    /// Serializes `msg` (of Rust type `type_id`) and queues it for `target`.
    /// Must not block.
    fn send(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        type_id: TypeId,
        type_name: &'static str,
    ) -> Result<(), RemoteSendError>;

    /// Resolves once the queue towards `target` has room again.
    fn room(&self, target: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>>;

    /// True if the message would be refused as `QueueFull` right now.
    fn is_full(&self, target: &RemoteRef) -> bool;
}

/// A remote actor: its identity and the transport that reaches it.
pub struct RemoteRef {
    path: ActorPath,
    uid: u64,
    system: ActorSystem,
    transport: Arc<dyn RemoteTransport>,
    me: Weak<RemoteRef>,
    /// Free for the transport: e.g. a cached association index.
    pub route_hint: AtomicU64,
    /// Free for the transport: e.g. the recipient id on the current
    /// connection, tagged with the connection's generation.
    pub id_hint: AtomicU64,
    /// Free for the transport: e.g. where the registration of the message
    /// type last sent through this ref is kept.
    pub type_hint: AtomicU64,
    /// Non-zero for the reply handle of an ask made on the remote node: the
    /// id that node knows the handle by, so a reply names it directly.
    correlation: u64,
}

impl RemoteRef {
    /// A ref to the actor at `path` (which names the remote node) with
    /// incarnation `uid`.
    pub fn new(
        path: ActorPath,
        uid: u64,
        system: ActorSystem,
        transport: Arc<dyn RemoteTransport>,
    ) -> Arc<Self> {
        Self::build(path, uid, 0, system, transport)
    }

    /// The reply handle of an ask made on the node `node` names (any path
    /// there), known on that node by `correlation` (the handle's uid).
    pub fn reply_handle(
        node: &ActorPath,
        correlation: u64,
        system: ActorSystem,
        transport: Arc<dyn RemoteTransport>,
    ) -> Arc<Self> {
        let path = node.reply_handle(correlation);
        Self::build(path, correlation, correlation, system, transport)
    }

    fn build(
        path: ActorPath,
        uid: u64,
        correlation: u64,
        system: ActorSystem,
        transport: Arc<dyn RemoteTransport>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| RemoteRef {
            path,
            uid,
            system,
            transport,
            me: me.clone(),
            route_hint: AtomicU64::new(0),
            id_hint: AtomicU64::new(0),
            type_hint: AtomicU64::new(0),
            correlation,
        })
    }

    /// The type-erased handle, from a plain reference (as a transport gets
    /// it in [`RemoteTransport::send`]).
    pub fn any(&self) -> Option<AnyRef> {
        self.me.upgrade().map(|me| AnyRef { target: me })
    }

    /// The actor system this ref belongs to.
    pub fn system(&self) -> &ActorSystem {
        &self.system
    }

    /// The remote actor's path.
    pub fn path(&self) -> &ActorPath {
        &self.path
    }

    /// The remote actor's incarnation uid.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// For the reply handle of an ask made on the remote node: the id that
    /// node knows it by.
    pub fn correlation(&self) -> Option<u64> {
        (self.correlation != 0).then_some(self.correlation)
    }

    /// The type-erased handle.
    pub fn to_any(self: &Arc<Self>) -> AnyRef {
        AnyRef {
            target: self.clone(),
        }
    }

    /// The handle typed for protocol `M`. Any `M` is accepted here; the
    /// transport checks at send time that `M` is registered.
    pub fn typed<M: Send + 'static>(self: &Arc<Self>) -> ActorRef<M> {
        ActorRef::from_target(self.clone())
    }

    fn undeliverable(&self, type_name: &'static str, err: &RemoteSendError) {
        tracing::warn!(recipient = %self.path, message_type = type_name, "remote send failed: {err}");
        self.system
            .dead_letter(&self.path, type_name, DeadLetterReason::Undeliverable);
    }
}

impl fmt::Debug for RemoteRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteRef({}#{})", self.path, self.uid)
    }
}

impl Runnable for RemoteRef {
    fn run(self: Arc<Self>) {}
}

impl SystemTarget for RemoteRef {
    fn path(&self) -> &ActorPath {
        &self.path
    }

    fn uid(&self) -> u64 {
        self.uid
    }

    fn system(&self) -> &ActorSystem {
        &self.system
    }

    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher> {
        // Remote death watch and remote supervision belong to the remote
        // reliability work (failure detector, system-message redelivery);
        // until then a watch is answered as if the connection were lost, so
        // a watcher never waits forever.
        if let SystemMsg::Watch(watcher) = msg {
            tracing::warn!(target = %self.path, "remote death watch is not supported yet; answering Terminated");
            watcher.send_system(SystemMsg::DeathWatchNotification(self.uid));
        }
        None
    }

    fn is_terminated(&self) -> bool {
        false
    }

    fn mailbox_len(&self) -> usize {
        0
    }

    fn graceful_stop(&self) -> Option<&Dispatcher> {
        tracing::warn!(target = %self.path, "graceful_stop of a remote actor is not supported yet");
        None
    }

    fn typed_ref(self: Arc<Self>) -> Box<dyn Any + Send> {
        Box::new(())
    }

    fn message_type(&self) -> TypeId {
        TypeId::of::<RemoteRef>()
    }

    fn lookup_child(&self, _name: &str) -> Option<AnyRef> {
        None
    }

    fn as_remote(self: Arc<Self>) -> Option<Arc<RemoteRef>> {
        Some(self)
    }
}

impl<M: Send + 'static> RefTarget<M> for RemoteRef {
    fn enqueue(&self, env: Envelope<M>) -> Option<&Dispatcher> {
        if let Envelope::Msg(msg) | Envelope::Timer { msg, .. } = env {
            let name = std::any::type_name::<M>();
            if let Err(e) = self.transport.send(self, &msg, TypeId::of::<M>(), name) {
                self.undeliverable(name, &e);
            }
        }
        None
    }

    fn try_enqueue(&self, msg: M) -> Result<Option<&Dispatcher>, TellError<M>> {
        // No separate "is it full" look-up: `send` borrows the message and
        // answers `QueueFull` without having taken it.
        let name = std::any::type_name::<M>();
        match self.transport.send(self, &msg, TypeId::of::<M>(), name) {
            Ok(()) => Ok(None),
            Err(RemoteSendError::QueueFull(_)) => Err(TellError::Full(msg)),
            Err(e) => {
                self.undeliverable(name, &e);
                Ok(None)
            }
        }
    }

    fn wait_for_room(&self) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
        Some(self.transport.room(self))
    }
}
