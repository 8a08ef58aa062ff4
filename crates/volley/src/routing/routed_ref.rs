//! The sender-side routed ref: an `ActorRef<M>` target that is not a cell.
//!
//! Akka's RoutedActorRef runs the routing logic on the sender's thread and
//! enqueues straight into the chosen routee's mailbox; so does this target.
//! The router actor is involved only while messages must go through it
//! (before its first routees exist, and while messages forwarded in that
//! phase are still queued), and for management messages. Everything that is not a
//! message, system messages (watch, stop), paths, identity, graceful stop,
//! is forwarded to the router actor's cell, so the routed ref *is* the
//! router as far as death watch and `Context::stop` are concerned.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};

use super::error::{RoutingError, SelectError};
use super::logic::{Routees, Selection};
use super::router_actor::{InternalMsg, RouterMsg};
use super::shared::{via_actor, RouterShared};
use crate::actor::actor_ref::{ActorRef, AnyRef, LocalTarget, RefTarget, SystemTarget};
use crate::actor::mailbox::Envelope;
use crate::actor::path::ActorPath;
use crate::actor::system_msg::SystemMsg;
use crate::dispatcher::{Dispatcher, Runnable};
use crate::error::TellError;
use crate::system::actor_system::ActorSystem;
use crate::system::event_stream::DeadLetterReason;
use crate::util::locks::lock;

/// Where a routing failure of one `ask` is reported, so the asker gets the
/// reason instead of a bare "reply handle dropped".
pub(crate) type ErrorSink = Arc<Mutex<Option<RoutingError>>>;

pub(crate) struct RoutedTarget<M: Send + 'static> {
    /// The router actor's cell.
    pub(crate) router: AnyRef,
    pub(crate) control: ActorRef<RouterMsg<M>>,
    pub(crate) shared: Arc<RouterShared<M>>,
    pub(crate) sink: Option<ErrorSink>,
}

impl<M: Send + 'static> RoutedTarget<M> {
    /// A copy that reports routing failures into `sink`.
    pub(crate) fn with_sink(&self, sink: ErrorSink) -> Self {
        RoutedTarget {
            router: self.router.clone(),
            control: self.control.clone(),
            shared: self.shared.clone(),
            sink: Some(sink),
        }
    }

    /// Routes `msg`; a failure sends it to dead letters and is returned.
    pub(crate) fn route(&self, msg: M) -> Result<(), RoutingError> {
        let shared = &*self.shared;
        let state = shared.state();
        if via_actor(state) {
            self.forward_to_actor(msg);
            return Ok(());
        }
        match shared.with_routees(state, move |routees| route_in(shared, routees, msg)) {
            Ok(()) => Ok(()),
            Err((err, msg)) => Err(self.unroutable(err, msg)),
        }
    }

    /// [`RoutedTarget::route`] without the error: what a `tell` runs.
    /// Inlined into the sender with everything rare out of line (starting
    /// up, a changed routee list, no routee) and no result to hand back:
    /// the common path is one load of the state, this thread's view, the
    /// rotation step and the routee's own `tell` (callgrind).
    #[inline(always)]
    pub(crate) fn tell(&self, msg: M) {
        let shared = &*self.shared;
        let Some(routees) = shared.current_view(shared.state()) else {
            return self.tell_slow(msg);
        };
        let routed = route_in(shared, &routees, msg);
        drop(routees);
        if let Err((err, msg)) = routed {
            self.unroutable(err, msg);
        }
    }

    /// [`RoutedTarget::tell`] when this thread's view cannot be used as it
    /// is.
    #[cold]
    #[inline(never)]
    fn tell_slow(&self, msg: M) {
        let _ = self.route(msg);
    }

    #[cold]
    #[inline(never)]
    fn unroutable(&self, err: SelectError, msg: M) -> RoutingError {
        unroutable(&self.router, err, msg, self.sink.as_ref())
    }

    #[cold]
    #[inline(never)]
    fn forward_to_actor(&self, msg: M) {
        self.shared.forwarding();
        self.control
            .tell(RouterMsg::Internal(super::router_actor::Internal(
                InternalMsg::Forwarded {
                    msg,
                    sink: self.sink.clone(),
                },
            )));
    }
}

/// Picks the routee(s) among `routees` and enqueues, on the calling thread.
/// Hands the message back with the reason when no routee can take it.
#[inline(always)]
pub(crate) fn route_in<M: Send + 'static>(
    shared: &RouterShared<M>,
    routees: &Routees<M>,
    msg: M,
) -> Result<(), (SelectError, M)> {
    if shared.round_robin {
        // The default logic, without the call through the trait object.
        return match routees.next_routee() {
            Some(routee) => {
                routee.tell(msg);
                Ok(())
            }
            None => Err((SelectError::NoRoutees, msg)),
        };
    }
    route_by_logic(shared, routees, msg)
}

/// [`route_in`] for any logic but round-robin.
#[inline(never)]
fn route_by_logic<M: Send + 'static>(
    shared: &RouterShared<M>,
    routees: &Routees<M>,
    msg: M,
) -> Result<(), (SelectError, M)> {
    match shared.logic.select(&msg, routees) {
        Ok(Selection::One(i)) => match routees.refs().get(i) {
            Some(routee) => {
                routee.tell(msg);
                Ok(())
            }
            None => Err((
                SelectError::Rejected(format!(
                    "routing logic chose routee {i} of {}",
                    routees.len()
                )),
                msg,
            )),
        },
        Ok(Selection::All(copy)) => {
            broadcast(routees.refs(), msg, copy);
            Ok(())
        }
        Err(e) => Err((e, msg)),
    }
}

/// Sends copies to all but the last routee and the original to the last.
pub(crate) fn broadcast<M: Send + 'static>(refs: &[ActorRef<M>], msg: M, copy: fn(&M) -> M) {
    if let Some((last, rest)) = refs.split_last() {
        for r in rest {
            r.tell(copy(&msg));
        }
        last.tell(msg);
    }
}

/// Records why `msg` could not be routed and sends it to dead letters.
pub(crate) fn unroutable<M: Send + 'static>(
    router: &AnyRef,
    err: SelectError,
    msg: M,
    sink: Option<&ErrorSink>,
) -> RoutingError {
    let path = router.path().to_string();
    let message_type = std::any::type_name::<M>();
    let error = match err {
        SelectError::NoRoutees if router.is_terminated() => {
            RoutingError::RouterTerminated { router: path }
        }
        err => RoutingError::from_select(err, path, message_type),
    };
    tracing::debug!("{error}");
    if let Some(sink) = sink {
        *lock(sink) = Some(error.clone());
    }
    // Only now drop the message: it may hold an ask's reply handle, whose
    // drop wakes the asker, which then reads the sink.
    router
        .target
        .system()
        .dead_letter(router.path(), message_type, DeadLetterReason::NoRoutee);
    drop(msg);
    error
}

impl<M: Send + 'static> Runnable for RoutedTarget<M> {
    /// Never scheduled: `enqueue` hands messages on and returns `None`.
    fn run(self: Arc<Self>) -> usize {
        0
    }
}

impl<M: Send + 'static> SystemTarget for RoutedTarget<M> {
    fn path(&self) -> &ActorPath {
        self.router.path()
    }

    fn uid(&self) -> u64 {
        self.router.uid()
    }

    fn system(&self) -> &ActorSystem {
        self.router.target.system()
    }

    fn send_system(&self, msg: SystemMsg) -> Option<&Dispatcher> {
        // The router's cell must be scheduled, not this target: submit it here.
        self.router.send_system(msg);
        None
    }

    fn is_terminated(&self) -> bool {
        self.router.is_terminated()
    }

    fn graceful_stop(&self) -> Option<&Dispatcher> {
        self.router.graceful_stop();
        None
    }

    fn typed_ref(self: Arc<Self>, out: &mut dyn Any) {
        if let Some(slot) = out.downcast_mut::<Option<ActorRef<M>>>() {
            *slot = Some(ActorRef::from_target(self));
        }
    }

    fn message_type(&self) -> Option<TypeId> {
        Some(TypeId::of::<M>())
    }

    fn local(&self) -> Option<&dyn LocalTarget> {
        Some(self)
    }
}

impl<M: Send + 'static> LocalTarget for RoutedTarget<M> {
    /// The routees' queued messages, summed: the load behind the router.
    fn mailbox_len(&self) -> usize {
        let snapshot = self.shared.current();
        snapshot.refs().iter().map(|r| r.mailbox_len()).sum()
    }

    /// The router actor's children (a pool's routees).
    fn lookup_child(&self, name: &str) -> Option<AnyRef> {
        self.router.lookup_child(name)
    }
}

impl<M: Send + 'static> RefTarget<M> for RoutedTarget<M> {
    #[inline]
    fn enqueue(&self, env: Envelope<M>) -> Option<&Dispatcher> {
        match env {
            Envelope::Msg(msg) | Envelope::Timer { msg, .. } => self.tell(msg),
            // Only a mailbox makes these; the routee's mailbox captures
            // the span again, since routing runs on the sender's thread.
            Envelope::Traced { msg, .. } => self.tell(msg),
            Envelope::Poison => self.router.graceful_stop(),
            // Only a cell queues these, into its own mailbox.
            Envelope::Terminated(_) | Envelope::ReceiveTimeout(_) => {}
        }
        None
    }

    /// `Full` when the chosen routee's bounded mailbox is full; `Terminated`
    /// when the router has terminated or has no routee for the message.
    fn try_enqueue(&self, msg: M) -> Result<Option<&Dispatcher>, TellError<M>> {
        if self.router.is_terminated() {
            return Err(TellError::Terminated(msg));
        }
        let state = self.shared.state();
        if via_actor(state) {
            self.forward_to_actor(msg);
            return Ok(None);
        }
        let logic = &*self.shared.logic;
        self.shared
            .with_routees(state, move |routees| match logic.select(&msg, routees) {
                Ok(Selection::One(i)) => match routees.refs().get(i) {
                    Some(routee) => routee.try_tell(msg).map(|()| None),
                    None => Err(TellError::Terminated(msg)),
                },
                Ok(Selection::All(copy)) => {
                    broadcast(routees.refs(), msg, copy);
                    Ok(None)
                }
                Err(_) => Err(TellError::Terminated(msg)),
            })
    }
}
