//! The seam between the runtime and a transport: how actors that live
//! outside this process stand behind the ordinary [`ActorRef`] type.
//!
//! volley knows nothing of wires, connections or ids. A transport (crate
//! `volley-remote`) plugs in through three things, and only these:
//!
//! - **[`RemoteRef`]**, the target of an `ActorRef` to a remote actor: the
//!   actor's identity (path, uid) plus a [`RemoteRoute`], the transport's
//!   own object for that actor. The route carries the transport's per-ref
//!   state (which connection, which id the peer knows the actor by), typed
//!   and private to the transport.
//! - **[`RemoteRoute`]**, what the runtime calls to move things out: user
//!   messages ([`RemoteRoute::send`]) *and* system messages
//!   ([`RemoteRoute::send_system`]: watch, unwatch, terminate, and the death
//!   notice). In the other direction the transport hands what it read to
//!   [`deliver_system`] (and user messages to `ActorRef::tell`).
//! - **[`codec`]**, the hook through which an `ActorRef` inside a message
//!   serializes as whatever the transport writes for it.
//!
//! A `RemoteRef` accepts messages of *any* type: `ActorRef<M>` for a remote
//! actor is the same `Arc<RemoteRef>` seen through `M`, and the route
//! serializes the message by its registered type (an unregistered type is an
//! error at the sender, reported as a dead letter or returned by
//! `try_tell`).

pub mod codec;

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};

use crate::actor::actor_ref::{ActorRef, AnyRef, RefTarget, SystemTarget};
use crate::actor::mailbox::Envelope;
use crate::actor::path::ActorPath;
use crate::actor::system_msg::SystemMsg;
use crate::dispatcher::{Dispatcher, Runnable};
use crate::error::TellError;
use crate::observability::trace_context::TraceParent;
use crate::system::actor_system::ActorSystem;
use crate::system::event_stream::DeadLetterReason;

pub use crate::actor::actor_ref::watch_key;
pub use crate::util::log_limiter::LogLimiter;
pub use crate::util::uid::random_uid;

/// At most this many warnings a second, per actor system, about messages a
/// transport refused; the dead-letter count stays exact.
pub(crate) const UNDELIVERABLE_WARNINGS_PER_SECOND: u32 = 10;

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

/// The Rust type of a message handed to [`RemoteRoute::send`] (by
/// reference: one pointer per send).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageType {
    /// Its `TypeId`, by which the transport finds its registration.
    pub id: TypeId,
    /// Its name, for errors and dead letters.
    pub name: &'static str,
}

impl MessageType {
    /// The type `M`.
    #[inline(always)]
    pub fn of<M: 'static>() -> Self {
        MessageType {
            id: TypeId::of::<M>(),
            name: std::any::type_name::<M>(),
        }
    }
}

/// The system messages that cross the seam, in either direction.
///
/// Outbound, the runtime hands them to [`RemoteRoute::send_system`] when a
/// local actor watches, unwatches or stops a remote one, or when a local
/// actor that a remote actor watched has terminated. Inbound, the transport
/// hands what it read to [`deliver_system`].
#[derive(Debug, Clone)]
pub enum RemoteSystemMsg {
    /// `watcher` wants a death notice when the recipient terminates.
    Watch {
        /// Who watches.
        watcher: AnyRef,
    },
    /// `watcher` no longer wants it.
    Unwatch {
        /// Who watched.
        watcher: AnyRef,
    },
    /// Stop the recipient now (Akka's `Terminate`); its queued messages
    /// become dead letters.
    Terminate,
    /// Stop the recipient once it has handled the messages queued before
    /// this one (Akka's `PoisonPill`).
    GracefulStop,
    /// The actor with incarnation `uid`, which the recipient watched, has
    /// terminated (Akka's `DeathWatchNotification`).
    DeathNotice {
        /// The terminated actor's uid; delivered to a local watcher, the
        /// [`watch_key`] of the ref it watched.
        uid: u64,
    },
}

/// A transport's object for one remote actor: its per-ref state and the
/// way messages to that actor leave the process.
///
/// Every method is called on the sender's thread (a dispatcher worker, a
/// tokio task, any thread) and must not block.
pub trait RemoteRoute: Send + Sync + 'static {
    /// Serializes `msg`, of Rust type `ty`, and queues it for `target`.
    ///
    /// The error is boxed so that the result is one word: every remote
    /// send returns it, and a refusal is rare.
    fn send(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
    ) -> Result<(), Box<RemoteSendError>>;

    /// [`RemoteRoute::send`] with the sender's trace context, for the
    /// receiving node's handler span. A transport that cannot carry it
    /// sends the message without it (the default).
    fn send_traced(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
        _context: &TraceParent,
    ) -> Result<(), Box<RemoteSendError>> {
        self.send(target, msg, ty)
    }

    /// Carries a system message to `target`. Nothing is returned: a system
    /// message that cannot be carried is the transport's to report (a
    /// watch it cannot carry must still end in a death notice, so that a
    /// watcher never waits forever).
    fn send_system(&self, target: &RemoteRef, msg: RemoteSystemMsg);

    /// Resolves once the queue towards `target` has room again after
    /// [`RemoteSendError::QueueFull`].
    fn room(&self, target: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>>;

    /// True once the transport knows that `target` has terminated.
    fn is_terminated(&self, _target: &RemoteRef) -> bool {
        false
    }

    /// The route as `Any`, so a transport can recognise its own routes.
    fn as_any(&self) -> &dyn Any;
}

/// A remote actor: its identity and the transport's route to it.
pub struct RemoteRef {
    /// Set when built, except for a reply handle's: built on first use from
    /// `reply_node`, since most reply handles are answered without anyone
    /// asking for their path (one is made per remote ask on the asked node).
    path: OnceLock<ActorPath>,
    /// A reply handle's node (`name@host:port`).
    reply_node: Option<Arc<str>>,
    uid: u64,
    system: ActorSystem,
    route: Arc<dyn RemoteRoute>,
    me: Weak<RemoteRef>,
    /// Non-zero for the reply handle of an ask made on the remote node: the
    /// id that node knows the handle by, so a reply names it directly.
    correlation: u64,
}

impl RemoteRef {
    /// A ref to the actor at `path` (which names the remote node) with
    /// incarnation `uid`, reached through `route`.
    pub fn new(
        path: ActorPath,
        uid: u64,
        system: ActorSystem,
        route: Arc<dyn RemoteRoute>,
    ) -> Arc<Self> {
        Self::build(OnceLock::from(path), None, uid, 0, system, route)
    }

    /// The reply handle of an ask made on the node `node` names (any path
    /// there), known on that node by `correlation` (the handle's uid).
    pub fn reply_handle(
        node: &ActorPath,
        correlation: u64,
        system: ActorSystem,
        route: Arc<dyn RemoteRoute>,
    ) -> Arc<Self> {
        let node = Some(node.system_part().clone());
        Self::build(
            OnceLock::new(),
            node,
            correlation,
            correlation,
            system,
            route,
        )
    }

    fn build(
        path: OnceLock<ActorPath>,
        reply_node: Option<Arc<str>>,
        uid: u64,
        correlation: u64,
        system: ActorSystem,
        route: Arc<dyn RemoteRoute>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| RemoteRef {
            path,
            reply_node,
            uid,
            system,
            route,
            me: me.clone(),
            correlation,
        })
    }

    /// The type-erased handle, from a plain reference (as a route gets it
    /// in [`RemoteRoute::send`]); `None` while the ref is being dropped.
    pub fn any(&self) -> Option<AnyRef> {
        self.me.upgrade().map(|me| AnyRef { target: me })
    }

    /// The actor system this ref belongs to.
    pub fn system(&self) -> &ActorSystem {
        &self.system
    }

    /// The remote actor's path.
    pub fn path(&self) -> &ActorPath {
        self.path.get_or_init(|| {
            let node = self.reply_node.clone().expect("a path or a reply node");
            ActorPath::reply_handle_on(node, self.correlation)
        })
    }

    /// The remote actor's incarnation uid (0: whatever lives at the path).
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// The transport's route to this actor.
    pub fn route(&self) -> &Arc<dyn RemoteRoute> {
        &self.route
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
    /// route checks at send time that `M` is registered.
    pub fn typed<M: Send + 'static>(self: &Arc<Self>) -> ActorRef<M> {
        ActorRef::from_target(self.clone())
    }

    /// A message the route refused: always counted, logged within the
    /// system's rate limit, since a full queue refuses every tell.
    fn undeliverable(&self, type_name: &'static str, err: &RemoteSendError) {
        if self.system.allow_undeliverable_warning() {
            tracing::warn!(recipient = %self.path(), message_type = type_name, "remote send failed: {err}");
        }
        self.system
            .dead_letter(self.path(), type_name, DeadLetterReason::Undeliverable);
    }
}

/// Tells `target` a message that came from another node with the sender's
/// trace context: if the target is an actor with `message_spans` on, its
/// handler span gets `context` as parent (through the system's
/// [`TracePropagator`](crate::TracePropagator)); any other target gets the
/// message alone, as with `tell`.
pub fn tell_with_trace_parent<M: Send + 'static>(
    target: &ActorRef<M>,
    msg: M,
    context: TraceParent,
) {
    target.tell_from_remote(msg, context);
}

/// Tells `system` the `host:port` its transport advertises, so that what
/// must agree across nodes about a local actor uses the path other nodes
/// see for it (the consistent-hashing ring places routees by full path).
pub fn set_local_authority(system: &ActorSystem, authority: &str) {
    *crate::util::locks::lock(&system.shared.local_authority) = Some(authority.into());
}

/// The path of `path` as other nodes see it: with this system's advertised
/// `host:port` when the path is local and a transport has said it.
pub(crate) fn path_seen_remotely(system: &ActorSystem, path: &ActorPath) -> String {
    let authority = crate::util::locks::lock(&system.shared.local_authority).clone();
    match authority {
        Some(authority) if path.authority().is_none() => path.to_string_with_authority(&authority),
        _ => path.to_string(),
    }
}

/// Hands a system message that a transport read to the local target it
/// names. `Watch`'s watcher is then usually a [`RemoteRef`], so the death
/// notice travels back through its route.
pub fn deliver_system(target: &AnyRef, msg: RemoteSystemMsg) {
    match msg {
        RemoteSystemMsg::Watch { watcher } => target.send_system(SystemMsg::Watch(watcher)),
        RemoteSystemMsg::Unwatch { watcher } => target.send_system(SystemMsg::Unwatch(watcher)),
        RemoteSystemMsg::Terminate => target.send_system(SystemMsg::Stop),
        RemoteSystemMsg::GracefulStop => target.graceful_stop(),
        RemoteSystemMsg::DeathNotice { uid } => {
            target.send_system(SystemMsg::DeathWatchNotification(uid))
        }
    }
}

impl fmt::Debug for RemoteRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteRef({}#{})", self.path(), self.uid)
    }
}

impl Runnable for RemoteRef {
    fn run(self: Arc<Self>) -> usize {
        0
    }
}

impl SystemTarget for RemoteRef {
    fn path(&self) -> &ActorPath {
        RemoteRef::path(self)
    }

    fn uid(&self) -> u64 {
        self.uid
    }

    fn system(&self) -> &ActorSystem {
        &self.system
    }

    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher> {
        let msg = match msg {
            SystemMsg::Watch(watcher) => RemoteSystemMsg::Watch { watcher },
            SystemMsg::Unwatch(watcher) => RemoteSystemMsg::Unwatch { watcher },
            SystemMsg::DeathWatchNotification(uid) => RemoteSystemMsg::DeathNotice { uid },
            SystemMsg::Stop => RemoteSystemMsg::Terminate,
            // Supervision stays within a process: a remote actor is never
            // a local actor's child or parent.
            SystemMsg::Failed { .. }
            | SystemMsg::ChildTerminated(_)
            | SystemMsg::Resume
            | SystemMsg::Restart(_)
            | SystemMsg::RestartAfter(_)
            | SystemMsg::BackoffElapsed => {
                tracing::debug!(target = %self.path(), "supervision message to a remote actor dropped");
                return None;
            }
        };
        self.route.send_system(self, msg);
        None
    }

    fn is_terminated(&self) -> bool {
        self.route.is_terminated(self)
    }

    fn graceful_stop(&self) -> Option<&Dispatcher> {
        self.route.send_system(self, RemoteSystemMsg::GracefulStop);
        None
    }

    fn is_reply_handle(&self) -> bool {
        self.correlation != 0
    }

    /// Any protocol: the route checks the type when a message is sent, so
    /// [`AnyRef::downcast`] goes through `as_remote` instead.
    fn message_type(&self) -> Option<TypeId> {
        None
    }

    fn as_remote(self: Arc<Self>) -> Option<Arc<RemoteRef>> {
        Some(self)
    }
}

impl RemoteRef {
    /// Hands `msg` to the route, with the sender's trace context when the
    /// system has a propagator and the sender is in a span. Without a
    /// propagator this is one test on the send path; the rest is out of
    /// line (inlined, it cost every remote send a call frame).
    #[inline(always)]
    fn route_send(
        &self,
        msg: &(dyn Any + Send),
        ty: &MessageType,
    ) -> Result<(), Box<RemoteSendError>> {
        match &self.system.settings().tracing.propagator {
            None => self.route.send(self, msg, ty),
            Some(propagation) => self.route_send_traced(propagation, msg, ty),
        }
    }

    #[inline(never)]
    fn route_send_traced(
        &self,
        propagation: &crate::observability::trace_context::Propagation,
        msg: &(dyn Any + Send),
        ty: &MessageType,
    ) -> Result<(), Box<RemoteSendError>> {
        let current = tracing::Span::current();
        if !current.is_none() {
            if let Some(context) = propagation.0.inject(&current).filter(TraceParent::is_valid) {
                return self.route.send_traced(self, msg, ty, &context);
            }
        }
        self.route.send(self, msg, ty)
    }

    /// What `try_enqueue` does with a refusal other than a full queue or a
    /// node that is gone: out of line, since the common send has none.
    #[cold]
    #[inline(never)]
    fn refused(&self, ty: &MessageType, e: Box<RemoteSendError>) {
        self.undeliverable(ty.name, &e);
    }
}

impl<M: Send + 'static> RefTarget<M> for RemoteRef {
    fn enqueue(&self, env: Envelope<M>) -> Option<&Dispatcher> {
        let msg = match env {
            Envelope::Msg(msg) | Envelope::Timer { msg, .. } => msg,
            Envelope::Traced { msg, .. } => msg,
            Envelope::Poison | Envelope::Terminated(_) | Envelope::ReceiveTimeout(_) => {
                return None
            }
        };
        let ty = MessageType::of::<M>();
        if let Err(e) = self.route_send(&msg, &ty) {
            self.refused(&ty, e);
        }
        None
    }

    fn try_enqueue(&self, msg: M) -> Result<Option<&Dispatcher>, TellError<M>> {
        // No separate "is it full" look-up: `send` borrows the message and
        // answers `QueueFull` without having taken it.
        let ty = MessageType::of::<M>();
        match self.route_send(&msg, &ty) {
            Ok(()) => Ok(None),
            Err(e) => match *e {
                RemoteSendError::QueueFull(_) => Err(TellError::Full(msg)),
                // The node is gone (or remoting stopped): like a terminated
                // local actor, the message is handed back, so that
                // `send().await` fails instead of waiting.
                RemoteSendError::Unavailable(_) => Err(TellError::Terminated(msg)),
                _ => {
                    self.refused(&ty, e);
                    Ok(None)
                }
            },
        }
    }

    fn wait_for_room(&self) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
        Some(self.route.room(self))
    }
}
