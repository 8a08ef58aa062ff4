//! Actor references.
//!
//! [`ActorRef<M>`] is a typed handle that accepts messages of the actor's
//! protocol `M`; [`AnyRef`] is the same handle with the type erased, used for
//! death watch, children lists and lookups. Both point at a target behind a
//! trait object, so a remote actor can stand behind the very same types.
//!
//! Scheduling is split from enqueueing on purpose: the target says "I now need
//! to run on this dispatcher" and the ref submits its own `Arc`, which saves
//! the cell from keeping a weak pointer to itself and upgrading it on every
//! wake-up.

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::actor::mailbox::Envelope;
use crate::actor::mailbox_batch::MessageBatch;
use crate::actor::path::ActorPath;
use crate::actor::system_msg::SystemMsg;
use crate::ask::{self, AskError, ReplyTo};
use crate::dispatcher::{Dispatcher, Runnable};
use crate::error::TellError;
use crate::remote::RemoteRef;
use crate::system::actor_system::ActorSystem;

/// The type-independent side of anything a ref can point at.
pub(crate) trait SystemTarget: Runnable {
    fn path(&self) -> &ActorPath;
    /// The last element of the path. A cell answers without building its
    /// path, which it does only when asked for it.
    fn name(&self) -> &str {
        self.path().name()
    }
    /// Unique per actor incarnation in this process.
    fn uid(&self) -> u64;
    fn system(&self) -> &ActorSystem;
    /// Queues a system message; `Some` means the caller must schedule the target.
    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher>;
    fn is_terminated(&self) -> bool;
    /// Queues a graceful stop behind the messages already queued (a reply
    /// handle, which queues nothing, ignores it).
    fn graceful_stop(&self) -> Option<&Dispatcher>;
    /// Fills `out`, an `Option<ActorRef<M>>` for this target's `M`, for
    /// downcasting an [`AnyRef`]; leaves it alone for a target without one
    /// fixed protocol or another `M`. Filling a slot the caller owns costs
    /// no allocation (a `Box<dyn Any>` did, on every remote reply).
    fn typed_ref(self: Arc<Self>, _out: &mut dyn Any) {}
    /// The one protocol this target accepts; `None` for a remote actor,
    /// which accepts any registered type and is typed through `as_remote`.
    fn message_type(&self) -> Option<TypeId>;
    /// True for an ask's reply handle (local or remote): single-use, never
    /// worth remembering in a table.
    fn is_reply_handle(&self) -> bool {
        false
    }
    /// A local ask's reply handle: where the remote transport keeps the
    /// handle's correlation id once it has given it one.
    fn correlation_cell(&self) -> Option<&AtomicU64> {
        None
    }
    /// The remote ref behind this target, if it is one.
    fn as_remote(self: Arc<Self>) -> Option<Arc<RemoteRef>> {
        None
    }
    /// The queue and children behind this target, for one that has them in
    /// this process (an actor, an adapter into one, a router); `None` for
    /// a reply handle or a remote ref.
    fn local(&self) -> Option<&dyn LocalTarget> {
        None
    }
}

/// What only a target with a queue and children in this process can tell:
/// kept apart from [`SystemTarget`] so that a reply handle or a remote ref
/// does not have to answer questions about a mailbox it does not have.
pub(crate) trait LocalTarget {
    /// Approximate number of queued user messages.
    fn mailbox_len(&self) -> usize;
    /// True while system messages wait for the target to handle them.
    fn has_system_messages(&self) -> bool {
        false
    }
    /// The child of that name, for lookups by path.
    fn lookup_child(&self, name: &str) -> Option<AnyRef>;
    /// The dispatcher that runs this target, for one that a dispatcher runs
    /// (an actor, or an adapter into one); `None` for a router, whose
    /// routees run on their own. An `ask` chooses how it waits from it.
    fn dispatcher(&self) -> Option<&Dispatcher> {
        None
    }
}

/// The typed side: how messages of `M` get in.
pub(crate) trait RefTarget<M>: SystemTarget {
    fn enqueue(&self, env: Envelope<M>) -> Option<&Dispatcher>;
    fn try_enqueue(&self, msg: M) -> Result<Option<&Dispatcher>, TellError<M>>;
    /// Queues a message that came from another node with the sender's
    /// trace context. Only an actor's mailbox keeps the context (for its
    /// handler span); any other target takes the message alone.
    fn enqueue_from_remote(
        &self,
        msg: M,
        _parent: crate::observability::trace_context::TraceParent,
    ) -> Option<&Dispatcher> {
        self.enqueue(Envelope::Msg(msg))
    }
    /// Queues every message of `msgs` in order, leaving it empty. The
    /// default tells them one by one, which is right for every target whose
    /// `enqueue` never asks to be scheduled; an actor cell overrides it (one
    /// mailbox lock, one scheduling decision) because its `enqueue` may
    /// answer `Some` once per message.
    fn enqueue_all(&self, msgs: &mut Vec<M>) -> Option<&Dispatcher> {
        for msg in msgs.drain(..) {
            let scheduled = self.enqueue(Envelope::Msg(msg));
            debug_assert!(
                scheduled.is_none(),
                "a schedulable target must override enqueue_all"
            );
        }
        None
    }
    /// Queues every envelope of `batch` in order, leaving it empty. The
    /// default queues them one by one, as [`RefTarget::enqueue_all`]'s
    /// does; an actor cell overrides it (its mailbox takes the batch whole).
    fn enqueue_batch(&self, batch: &mut Vec<Envelope<M>>) -> Option<&Dispatcher> {
        for env in batch.drain(..) {
            let scheduled = self.enqueue(env);
            debug_assert!(
                scheduled.is_none(),
                "a schedulable target must override enqueue_batch"
            );
        }
        None
    }
    /// A future that resolves when `try_enqueue` may succeed again after
    /// `Full`; `None` means "retry after yielding".
    fn wait_for_room(&self) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
        None
    }
}

/// A typed, location-transparent handle to an actor whose protocol is `M`.
///
/// Cheap to clone (one reference count), `Send + Sync`, comparable and
/// hashable (by actor incarnation: a restarted actor keeps its ref, a new actor
/// at the same path gets a different one), and it displays its path.
pub struct ActorRef<M: Send + 'static> {
    target: Arc<dyn RefTarget<M>>,
}

impl<M: Send + 'static> ActorRef<M> {
    pub(crate) fn from_target(target: Arc<dyn RefTarget<M>>) -> Self {
        ActorRef { target }
    }

    /// Sends a message. Never blocks. A message to a terminated actor, or one
    /// that a full bounded mailbox drops, goes to dead letters.
    #[inline]
    pub fn tell(&self, msg: M) {
        self.send_envelope(Envelope::Msg(msg));
    }

    /// `tell` of a message that came from another node with its sender's
    /// trace context (`crate::remote::tell_with_trace_parent`).
    pub(crate) fn tell_from_remote(
        &self,
        msg: M,
        parent: crate::observability::trace_context::TraceParent,
    ) {
        if let Some(dispatcher) = self.target.enqueue_from_remote(msg, parent) {
            dispatcher.submit(self.target.clone());
        }
    }

    #[inline]
    pub(crate) fn send_envelope(&self, env: Envelope<M>) {
        if let Some(dispatcher) = self.target.enqueue(env) {
            dispatcher.submit(self.target.clone());
        }
    }

    /// Sends every message of `msgs`, in order, and leaves `msgs` empty (its
    /// capacity stays, so a caller can reuse it). The same as telling each,
    /// but a local actor's mailbox is locked once and the actor scheduled at
    /// most once for the whole batch: the remote reader delivers runs of
    /// frames for one actor this way.
    #[inline]
    pub fn tell_all(&self, msgs: &mut Vec<M>) {
        if let Some(dispatcher) = self.target.enqueue_all(msgs) {
            dispatcher.submit(self.target.clone());
        }
    }

    /// Sends every message of `batch`, in order, and leaves it empty, with
    /// its room kept for the next batch: the same as telling each (a
    /// bounded mailbox still applies its overflow rule to each, and what it
    /// drops goes to dead letters), but a local actor's default mailbox
    /// takes the batch whole, with no message moved again, and the actor
    /// is scheduled at most once. The remote reader delivers its runs so.
    #[inline]
    pub fn tell_batch(&self, batch: &mut MessageBatch<M>) {
        if let Some(dispatcher) = self.target.enqueue_batch(&mut batch.staged) {
            dispatcher.submit(self.target.clone());
        }
    }

    /// Sends only if the mailbox has room (Akka's `offer`): a full bounded
    /// mailbox or a terminated actor hands the message back.
    #[inline]
    pub fn try_tell(&self, msg: M) -> Result<(), TellError<M>> {
        if let Some(dispatcher) = self.target.try_enqueue(msg)? {
            dispatcher.submit(self.target.clone());
        }
        Ok(())
    }

    /// Sends, waiting while the recipient cannot take the message: a full
    /// bounded mailbox, or a remote association at its outbound limit
    /// (backpressure). Fails only if the actor has terminated.
    pub async fn send(&self, msg: M) -> Result<(), TellError<M>> {
        let mut msg = msg;
        loop {
            match self.try_tell(msg) {
                Ok(()) => return Ok(()),
                Err(TellError::Full(back)) => {
                    msg = back;
                    match self.target.wait_for_room() {
                        Some(room) => room.await,
                        None => match self
                            .target
                            .system()
                            .sleep(std::time::Duration::from_micros(50))
                        {
                            Some(pause) => pause.await,
                            None => return Err(TellError::Terminated(msg)),
                        },
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Request and reply. `make` builds the request around a reply handle; the
    /// future resolves with the first reply, or fails after `timeout`. A reply
    /// that arrives after the timeout goes to dead letters.
    ///
    /// Works from any executor: the timeout runs on the actor system's
    /// timer, armed only if the reply does not come at once (`crate::ask`
    /// explains the wait).
    pub async fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, AskError> {
        ask::ask::<true, M, R>(self, self.target.system(), make, timeout).await
    }

    /// Like [`ActorRef::ask`], but a full bounded mailbox fails the ask at
    /// once with [`AskError::MailboxFull`] instead of waiting for room: for
    /// a server that sheds load rather than queueing it (the gRPC gateway
    /// answers UNAVAILABLE). The request is dropped unsent.
    pub async fn try_ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, AskError> {
        ask::ask::<false, M, R>(self, self.target.system(), make, timeout).await
    }

    /// Stops the actor after it has handled the messages queued before this
    /// call (Akka's PoisonPill).
    pub fn graceful_stop(&self) {
        if let Some(d) = self.target.graceful_stop() {
            d.submit(self.target.clone());
        }
    }

    /// The actor's path.
    pub fn path(&self) -> &ActorPath {
        self.target.path()
    }

    /// The system the ref belongs to (a remote ref: the one that holds it).
    pub(crate) fn system(&self) -> &ActorSystem {
        self.target.system()
    }

    #[inline]
    pub(crate) fn dispatcher(&self) -> Option<&Dispatcher> {
        self.target.local().and_then(LocalTarget::dispatcher)
    }

    /// The target itself, for a target that wraps another (an adapter).
    pub(crate) fn target_ref(&self) -> &Arc<dyn RefTarget<M>> {
        &self.target
    }

    /// A ref that takes `N`s and hands each to this actor as
    /// `map(n)`: Akka Typed's message adapter, for an actor that takes
    /// replies or events of another protocol (see
    /// [`Context::message_adapter`](crate::Context::message_adapter), the
    /// usual way to make one; this one is for code outside the actor).
    /// It has this actor's path and identity: it compares equal to this
    /// ref, and watching it watches the actor. `map` runs when a message
    /// is sent, on the sender's side; if it panics, the message is a dead
    /// letter and the sender carries on. Local only for now: a copy sent
    /// to another node is not usable there (docs/reference/message-adapters.md).
    pub fn adapt<N: Send + 'static>(
        &self,
        map: impl Fn(N) -> M + Send + Sync + 'static,
    ) -> ActorRef<N> {
        crate::actor::adapter::Adapter::new_ref(self.clone(), map)
    }

    /// True once the actor has terminated (never true for a live one; may lag
    /// a stop that is in progress).
    pub fn is_terminated(&self) -> bool {
        self.target.is_terminated()
    }

    /// Approximate count of queued user messages (cheap; for routing hints,
    /// not for decisions that need an exact number).
    pub fn mailbox_len(&self) -> usize {
        self.target.local().map_or(0, LocalTarget::mailbox_len)
    }

    /// True while system messages (a stop, a watch, a child's end) are
    /// queued for the actor and not yet handled. For tests, which wait on
    /// it for a stop to have reached an actor busy in its handler; not a
    /// stable API.
    #[doc(hidden)]
    pub fn has_pending_system_messages(&self) -> bool {
        self.target
            .local()
            .is_some_and(LocalTarget::has_system_messages)
    }

    /// The address of the target object, for identity caches.
    pub(crate) fn target_address(&self) -> usize {
        Arc::as_ptr(&self.target) as *const () as usize
    }

    /// Identity of the target object, for caches (see [`AnyRef::target_key`]).
    pub fn target_key(&self) -> TargetKey {
        TargetKey(self.target_address())
    }

    /// The same handle with its message type erased.
    pub fn to_any(&self) -> AnyRef {
        AnyRef {
            target: self.target.clone(),
        }
    }
}

impl<M: Send + 'static> Clone for ActorRef<M> {
    fn clone(&self) -> Self {
        ActorRef {
            target: self.target.clone(),
        }
    }
}

impl<M: Send + 'static> PartialEq for ActorRef<M> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.target, &other.target) || same_identity(&*self.target, &*other.target)
    }
}
impl<M: Send + 'static> Eq for ActorRef<M> {}

impl<M: Send + 'static> Hash for ActorRef<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.target.uid().hash(state)
    }
}

impl<M: Send + 'static> PartialEq<AnyRef> for ActorRef<M> {
    fn eq(&self, other: &AnyRef) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.target), Arc::as_ptr(&other.target))
            || same_identity(&*self.target, &*other.target)
    }
}

/// Whether two targets stand for the same actor: the same uid and path
/// (a cell and a remote ref to it may differ as objects). Each `eq` first
/// compares the two objects' addresses, which settles the common case
/// with no virtual call and no path comparison (the children table
/// compares refs on every stop); `Arc::ptr_eq` where the types allow,
/// since it needs no data offset from the vtable.
fn same_identity(a: &dyn SystemTarget, b: &dyn SystemTarget) -> bool {
    a.uid() == b.uid() && a.path() == b.path()
}

impl<M: Send + 'static> fmt::Display for ActorRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.target.path(), self.target.uid())
    }
}

impl<M: Send + 'static> fmt::Debug for ActorRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActorRef({self})")
    }
}

/// An actor reference whose message type is not known statically.
#[derive(Clone)]
pub struct AnyRef {
    pub(crate) target: Arc<dyn SystemTarget>,
}

impl AnyRef {
    /// The actor's path.
    pub fn path(&self) -> &ActorPath {
        self.target.path()
    }

    /// The actor's name, the last element of its path.
    pub(crate) fn name(&self) -> &str {
        self.target.name()
    }

    /// The typed ref, if the actor's protocol is `M`. A remote actor's
    /// protocol is checked when a message is sent, so this always succeeds
    /// for a remote ref.
    pub fn downcast<M: Send + 'static>(&self) -> Option<ActorRef<M>> {
        match self.target.message_type() {
            Some(protocol) if protocol == TypeId::of::<M>() => {
                let mut typed: Option<ActorRef<M>> = None;
                self.target.clone().typed_ref(&mut typed);
                typed
            }
            Some(_) => None,
            None => Some(self.target.clone().as_remote()?.typed::<M>()),
        }
    }

    /// True once the actor has terminated.
    pub fn is_terminated(&self) -> bool {
        self.target.is_terminated()
    }

    /// Stops the actor after the messages already queued (Akka's PoisonPill).
    pub fn graceful_stop(&self) {
        if let Some(d) = self.target.graceful_stop() {
            d.submit(self.target.clone());
        }
    }

    /// The address of the target object, for identity caches.
    pub(crate) fn target_address(&self) -> usize {
        Arc::as_ptr(&self.target) as *const () as usize
    }

    /// A key for identity caches: equal for two handles to the same target
    /// object, and never shared with another object while this handle (or
    /// a clone) lives.
    pub fn target_key(&self) -> TargetKey {
        TargetKey(self.target_address())
    }

    /// True for an ask's reply handle, local or remote: it takes one reply
    /// and is gone, so tables should not remember it.
    pub fn is_reply_handle(&self) -> bool {
        self.target.is_reply_handle()
    }

    /// For a local ask's reply handle, a cell the remote transport keeps
    /// the handle's correlation id in (0 until it has one), so that a
    /// handle sent again, or watched, is named by the same id without a
    /// lookup by uid; `None` for anything else, a remote reply handle
    /// included.
    pub fn correlation_cell(&self) -> Option<&AtomicU64> {
        self.target.correlation_cell()
    }

    /// True if both handles point at the very same target object (cheaper
    /// than `==`, which compares paths when uids collide).
    pub fn same_target(&self, other: &AnyRef) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.target), Arc::as_ptr(&other.target))
    }

    /// The actor's incarnation uid (unique per actor in its process).
    pub fn uid(&self) -> u64 {
        self.target.uid()
    }

    /// What death watch files this ref under: see [`watch_key`].
    pub fn watch_key(&self) -> u64 {
        watch_key(self.target.uid(), self.target.path())
    }

    /// The remote ref behind this handle, if the actor is remote.
    pub fn as_remote(&self) -> Option<std::sync::Arc<RemoteRef>> {
        self.target.clone().as_remote()
    }

    pub(crate) fn lookup_child(&self, name: &str) -> Option<AnyRef> {
        self.target.local()?.lookup_child(name)
    }

    pub(crate) fn send_system(&self, msg: SystemMsg) {
        if let Some(d) = self.target.send_system(msg) {
            d.submit(self.target.clone());
        }
    }
}

/// The key under which a watcher files a watched actor, and which the
/// death notice for it names: its uid, or, for a ref that names no
/// incarnation (uid 0: a remote path resolved without one), a hash of its
/// path, so that two such refs to different actors do not share a watch.
pub fn watch_key(uid: u64, path: &crate::actor::path::ActorPath) -> u64 {
    if uid != 0 {
        return uid;
    }
    use std::hash::{DefaultHasher, Hash as _, Hasher as _};
    let mut hasher = DefaultHasher::new();
    path.hash(&mut hasher);
    hasher.finish().max(1)
}

impl PartialEq for AnyRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.target, &other.target) || same_identity(&*self.target, &*other.target)
    }
}
impl Eq for AnyRef {}

impl<M: Send + 'static> PartialEq<ActorRef<M>> for AnyRef {
    fn eq(&self, other: &ActorRef<M>) -> bool {
        other == self
    }
}

impl Hash for AnyRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.target.uid().hash(state)
    }
}

impl fmt::Display for AnyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.target.path(), self.target.uid())
    }
}

impl fmt::Debug for AnyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnyRef({self})")
    }
}

/// Identity of a ref's target object, for caches keyed by "the same ref"
/// (see [`AnyRef::target_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TargetKey(usize);

/// Anything that names an actor: an [`ActorRef`] or an [`AnyRef`].
pub trait ToAnyRef {
    /// The type-erased handle.
    fn to_any_ref(&self) -> AnyRef;
}

impl<M: Send + 'static> ToAnyRef for ActorRef<M> {
    fn to_any_ref(&self) -> AnyRef {
        self.to_any()
    }
}

impl ToAnyRef for AnyRef {
    fn to_any_ref(&self) -> AnyRef {
        self.clone()
    }
}
