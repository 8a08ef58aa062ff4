//! The actor cell: one actor's mailbox, system queue, children and state.
//!
//! # Scheduling
//! Who runs a cell is decided by the `SCHEDULED` bit of its [`Queues`]
//! (the protocol, and why it loses no wake-up, is in `queues`): a sender
//! that takes the bit submits the cell to its dispatcher; the worker hands
//! it back only after finding no work, then looks again. Because only the
//! holder of `SCHEDULED` runs the cell, the `inner` lock is never contended;
//! it is there so that the actor's state is provably touched by one thread
//! at a time without `unsafe`. The spawner takes `SCHEDULED` for a new cell
//! (`schedule_start`), and its first activation runs `pre_start`.

mod backoff;
mod lifecycle;
pub(crate) mod name;
mod queues;
mod run;

use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::util::locks::lock;

use crate::actor::actor_ref::{ActorRef, AnyRef, LocalTarget, RefTarget, SystemTarget};
use crate::actor::children::Children;
use crate::actor::context::Context;
use crate::actor::definition::{Actor, Props};
use crate::actor::mailbox::{Envelope, MailboxConfig};
use crate::actor::path::{validate_name, ActorPath};
use crate::actor::system_msg::SystemMsg;
use crate::dispatcher::Dispatcher;
use crate::error::{SpawnError, TellError};
use crate::system::actor_system::ActorSystem;
use crate::system::event_stream::DeadLetterReason;
use crate::util::sync::SpinMutex;
use crate::util::uid::next_uid;
use name::{ActorName, LazyPath};

pub(crate) use lifecycle::Mode;
use queues::{Pushed, Queues};

pub(crate) struct ActorCell<A: Actor> {
    uid: u64,
    /// The name, and the path built from the parent's when first asked for.
    path: LazyPath,
    parent: Option<AnyRef>,
    system: ActorSystem,
    dispatcher: Dispatcher,
    queues: Queues<A::Msg, SystemMsg>,
    pub(crate) children: Mutex<Children>,
    /// Only the holder of `SCHEDULED` locks this, so it is never contended:
    /// a spin lock, whose unlock is a plain store, is the cheapest safe way
    /// to hand the actor's state from one activation to the next.
    inner: SpinMutex<Option<Inner<A>>>,
    /// Messages taken out of the mailbox but not handled yet, as of the
    /// last activation boundary: keeps `mailbox_len` honest for routers
    /// at the cost of two relaxed stores per activation.
    batched: AtomicUsize,
}

/// Everything only the running activation touches.
pub(crate) struct Inner<A: Actor> {
    pub(crate) actor: Option<A>,
    pub(crate) ctx: Context<A>,
    pub(crate) props: Props<A>,
    pub(crate) mode: Mode,
    /// The message whose handling failed, if `keep_for_restart` kept it.
    pub(crate) failed_message: Option<A::Msg>,
    /// The instance being replaced never started (its `pre_start` failed):
    /// the restart creates the next one as a first start, `pre_start` and
    /// not `post_restart` (Akka turns such a Recreate into a Create).
    pub(crate) restart_as_start: bool,
    /// `[tracing] message_spans`, copied here at creation so the
    /// activation reads it without following the system's pointer.
    pub(crate) traced: bool,
}

impl<A: Actor> ActorCell<A> {
    /// A cell named `name` under `parent` (`None` for the root guardian).
    pub(crate) fn create(
        name: ActorName,
        parent: Option<AnyRef>,
        system: ActorSystem,
        dispatcher: Dispatcher,
        props: Props<A>,
    ) -> Arc<Self> {
        let traced = system.settings().tracing.message_spans;
        let cell = Arc::new(ActorCell {
            uid: next_uid(),
            path: LazyPath::new(name),
            parent,
            system,
            dispatcher,
            queues: Queues::new(props.mailbox, props.order.clone(), traced),
            children: Mutex::new(Children::default()),
            inner: SpinMutex::new(None),
            batched: AtomicUsize::new(0),
        });
        *cell.inner.lock() = Some(Inner {
            actor: None,
            ctx: Context::new(cell.clone(), props.stash),
            props,
            mode: Mode::Created,
            failed_message: None,
            restart_as_start: false,
            traced,
        });
        cell
    }

    pub(crate) fn path(&self) -> &ActorPath {
        self.path.get(self.parent.as_ref(), &self.system)
    }

    pub(crate) fn name(&self) -> &str {
        self.path.name()
    }

    /// Schedules the first activation, which runs `pre_start` (see
    /// `run`): no system message needed, so spawning allocates nothing for it.
    pub(crate) fn schedule_start(self: &Arc<Self>) {
        if self.queues.try_schedule() {
            self.dispatcher.submit(self.clone());
        }
    }

    pub(crate) fn parent(&self) -> Option<&AnyRef> {
        self.parent.as_ref()
    }

    /// On a resume: the children whose failures this actor escalated were
    /// left suspended, waiting for that decision, and carry on with it
    /// (Akka resumes the failed child with its resumed parent).
    pub(super) fn resume_escalated(&self) {
        for child in lock(&self.children).take_escalated() {
            child.send_system(crate::actor::system_msg::SystemMsg::Resume);
        }
    }

    /// On a restart: the children kept by `pre_restart`, which the new
    /// instance restarts, those that escalated included.
    pub(super) fn kept_children(&self) -> Vec<AnyRef> {
        let mut children = lock(&self.children);
        children.take_escalated();
        children.refs()
    }

    pub(crate) fn system(&self) -> &ActorSystem {
        &self.system
    }

    pub(crate) fn any_ref(self: &Arc<Self>) -> AnyRef {
        AnyRef {
            target: self.clone(),
        }
    }

    pub(crate) fn typed(self: &Arc<Self>) -> ActorRef<A::Msg> {
        ActorRef::from_target(self.clone())
    }

    /// Creates a child, reserving its name first so that a duplicate is an
    /// error, not a race.
    pub(crate) fn spawn_child<B: Actor>(
        self: &Arc<Self>,
        name: Option<&str>,
        props: Props<B>,
    ) -> Result<ActorRef<B::Msg>, SpawnError> {
        self.spawn_child_cell(name, props).map(|cell| cell.typed())
    }

    pub(crate) fn spawn_child_cell<B: Actor>(
        self: &Arc<Self>,
        name: Option<&str>,
        props: Props<B>,
    ) -> Result<Arc<ActorCell<B>>, SpawnError> {
        if let Some(name) = name {
            validate_name(name).map_err(|reason| SpawnError::InvalidName {
                name: name.to_string(),
                reason,
            })?;
        }
        if let MailboxConfig::Bounded { capacity: 0, .. } = props.mailbox {
            return Err(SpawnError::ZeroCapacity);
        }
        let dispatcher = self.system.dispatcher_for(props.dispatcher.as_deref())?;
        let mut children = lock(&self.children);
        if children.is_closed() {
            return Err(SpawnError::ParentTerminating {
                parent: self.path().to_string(),
            });
        }
        let name = match name {
            Some(name) if children.contains(name) => {
                return Err(SpawnError::DuplicateName {
                    parent: self.path().to_string(),
                    name: name.to_string(),
                })
            }
            Some(name) => ActorName::Given(name.into()),
            None => ActorName::Anonymous(children.next_anonymous_name()),
        };
        let child = ActorCell::create(
            name,
            Some(self.any_ref()),
            self.system.clone(),
            dispatcher,
            props,
        );
        children.insert(child.any_ref());
        drop(children);
        child.schedule_start();
        Ok(child)
    }

    pub(crate) fn dead_letter(&self, env: Envelope<A::Msg>, reason: DeadLetterReason) {
        // A timer's message for a stopped actor belongs to a cancelled timer
        // (stopping cancels them all): discarded, as in Akka, not a dead
        // letter. One dropped by a full mailbox is a dead letter.
        let counts = match env {
            Envelope::Msg(_) => true,
            Envelope::Traced { parent, .. } => {
                // Its context is released with it.
                if let Some(slots) = self.queues.mailbox().parents() {
                    slots.take(parent);
                }
                true
            }
            Envelope::Timer { .. } => reason == DeadLetterReason::MailboxOverflow,
            Envelope::Poison | Envelope::Terminated(_) | Envelope::ReceiveTimeout(_) => false,
        };
        if counts {
            self.system
                .dead_letter(self.path(), std::any::type_name::<A::Msg>(), reason);
        }
    }

    /// Called by senders that find the cell terminated, and by the cell itself
    /// when it terminates.
    pub(super) fn drain_to_dead_letters(&self) {
        while let Some(env) = self.queues.mailbox().pop() {
            self.dead_letter(env, DeadLetterReason::RecipientTerminated);
        }
    }

    /// Schedules the cell after a push if nobody is responsible for running
    /// it yet.
    #[inline]
    fn after_push(&self) -> Option<&Dispatcher> {
        match self.queues.after_push() {
            Pushed::Running => None,
            Pushed::Schedule => Some(&self.dispatcher),
            Pushed::Terminated => {
                self.drain_to_dead_letters();
                None
            }
        }
    }
}

impl<A: Actor> SystemTarget for ActorCell<A> {
    fn path(&self) -> &ActorPath {
        ActorCell::path(self)
    }

    fn name(&self) -> &str {
        ActorCell::name(self)
    }

    fn uid(&self) -> u64 {
        self.uid
    }

    fn system(&self) -> &ActorSystem {
        &self.system
    }

    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher> {
        match self.queues.push_system(msg) {
            Ok(schedule) => schedule.then_some(&self.dispatcher),
            Err(msg) => {
                lifecycle::answer_for_the_dead(self.uid, msg);
                None
            }
        }
    }

    fn is_terminated(&self) -> bool {
        self.queues.is_terminated()
    }

    fn graceful_stop(&self) -> Option<&Dispatcher> {
        if let Err(evicted) = self.queues.mailbox().push(Envelope::Poison) {
            self.dead_letter(evicted, DeadLetterReason::MailboxOverflow);
        }
        self.after_push()
    }

    fn typed_ref(self: Arc<Self>, out: &mut dyn Any) {
        if let Some(slot) = out.downcast_mut::<Option<ActorRef<A::Msg>>>() {
            *slot = Some(ActorRef::from_target(self));
        }
    }

    fn message_type(&self) -> Option<TypeId> {
        Some(TypeId::of::<A::Msg>())
    }

    #[inline]
    fn local(&self) -> Option<&dyn LocalTarget> {
        Some(self)
    }
}

impl<A: Actor> LocalTarget for ActorCell<A> {
    fn mailbox_len(&self) -> usize {
        self.queues.mailbox().len() + self.batched.load(Ordering::Relaxed)
    }

    fn has_system_messages(&self) -> bool {
        self.queues.has_system()
    }

    fn lookup_child(&self, name: &str) -> Option<AnyRef> {
        lock(&self.children).get(name).map(|e| e.actor.clone())
    }

    #[inline]
    fn dispatcher(&self) -> Option<&Dispatcher> {
        Some(&self.dispatcher)
    }
}

impl<A: Actor> RefTarget<A::Msg> for ActorCell<A> {
    #[inline]
    fn enqueue(&self, env: Envelope<A::Msg>) -> Option<&Dispatcher> {
        if let Err(dropped) = self.queues.mailbox().push(env) {
            self.dead_letter(dropped, DeadLetterReason::MailboxOverflow);
        }
        self.after_push()
    }

    fn enqueue_all(&self, msgs: &mut Vec<A::Msg>) -> Option<&Dispatcher> {
        if msgs.is_empty() {
            return None;
        }
        if !self.queues.mailbox().push_all(msgs) {
            // Bounded: each message meets the overflow rule on its own.
            for msg in msgs.drain(..) {
                if let Err(dropped) = self.queues.mailbox().push(Envelope::Msg(msg)) {
                    self.dead_letter(dropped, DeadLetterReason::MailboxOverflow);
                }
            }
        }
        self.after_push()
    }

    fn enqueue_batch(&self, batch: &mut Vec<Envelope<A::Msg>>) -> Option<&Dispatcher> {
        if batch.is_empty() {
            return None;
        }
        if !self.queues.mailbox().push_batch(batch) {
            // Bounded, ordered or traced: each message meets the mailbox's
            // rule on its own.
            for env in batch.drain(..) {
                if let Err(dropped) = self.queues.mailbox().push(env) {
                    self.dead_letter(dropped, DeadLetterReason::MailboxOverflow);
                }
            }
        }
        self.after_push()
    }

    fn enqueue_from_remote(
        &self,
        msg: A::Msg,
        parent: crate::observability::trace_context::TraceParent,
    ) -> Option<&Dispatcher> {
        let env = match self.queues.mailbox().parents() {
            Some(slots) => Envelope::Traced {
                msg,
                parent: slots.put(crate::observability::trace_context::Parent::Remote(parent)),
            },
            None => Envelope::Msg(msg),
        };
        self.enqueue(env)
    }

    fn try_enqueue(&self, msg: A::Msg) -> Result<Option<&Dispatcher>, TellError<A::Msg>> {
        if self.is_terminated() {
            return Err(TellError::Terminated(msg));
        }
        match self.queues.mailbox().try_push(Envelope::Msg(msg)) {
            Ok(()) => Ok(self.after_push()),
            Err(Envelope::Msg(msg)) => Err(TellError::Full(msg)),
            // try_push hands back the envelope it was given: a message.
            Err(_) => Ok(None),
        }
    }
}
