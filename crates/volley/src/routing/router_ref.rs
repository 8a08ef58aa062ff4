//! [`RouterRef`]: the handle to a router.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::broadcast::Broadcast;
use super::error::RoutingError;
use super::routed_ref::RoutedTarget;
use super::router_actor::RouterMsg;
use super::shared::RouterShared;
use crate::actor::actor_ref::{ActorRef, AnyRef, ToAnyRef};
use crate::actor::path::ActorPath;
use crate::ask::{AskError, ReplyTo};
use crate::util::locks::lock;

/// A handle to a router: routes messages of `M` to its routees and manages
/// them. Cheap to clone.
///
/// [`RouterRef::to_actor_ref`] gives a plain `ActorRef<M>` that routes the
/// same way (on the sender's side), to hand to code that expects an actor.
/// [`RouterRef::control`] is the router actor itself, for the management
/// protocol ([`RouterMsg`]). Both compare equal to the router actor's
/// [`AnyRef`], and watching either is watching the router.
pub struct RouterRef<M: Send + 'static> {
    target: Arc<RoutedTarget<M>>,
    routed: ActorRef<M>,
}

impl<M: Send + 'static> RouterRef<M> {
    pub(crate) fn new(control: ActorRef<RouterMsg<M>>, shared: Arc<RouterShared<M>>) -> Self {
        let target = Arc::new(RoutedTarget {
            router: control.to_any(),
            control,
            shared,
            sink: None,
        });
        RouterRef {
            routed: ActorRef::from_target(target.clone()),
            target,
        }
    }

    /// Routes `msg` on this thread, straight into the chosen routee's
    /// mailbox. If no routee can take it (none left, no consistent-hashing
    /// key) it goes to dead letters; use [`RouterRef::route`] to learn why.
    #[inline]
    pub fn tell(&self, msg: M) {
        self.target.tell(msg);
    }

    /// Like [`RouterRef::tell`], but says why a message went to dead letters.
    /// While the router is starting, messages pass through the router actor
    /// and such failures are only logged.
    pub fn route(&self, msg: M) -> Result<(), RoutingError> {
        self.target.route(msg)
    }

    /// Sends a copy of `msg` to every routee, whatever the logic (Akka's
    /// `Broadcast`). Goes through the router actor, so it is ordered with
    /// the management messages sent before it.
    pub fn broadcast(&self, msg: M)
    where
        M: Clone,
    {
        self.target
            .control
            .tell(RouterMsg::Broadcast(Broadcast::new(msg)));
    }

    /// Request and reply through the routing logic: the request goes to the
    /// routee the logic picks, the first reply wins. A router without
    /// routees, or a message without a consistent-hashing key, is an
    /// immediate error naming the router.
    pub async fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, RoutingError> {
        let sink = Arc::new(Mutex::new(None));
        let probe = ActorRef::from_target(Arc::new(self.target.with_sink(sink.clone())));
        match probe.ask(make, timeout).await {
            Ok(reply) => Ok(reply),
            Err(e) => Err(lock(&sink).take().unwrap_or_else(|| self.ask_error(e))),
        }
    }

    pub(crate) fn ask_error(&self, e: AskError) -> RoutingError {
        match e {
            AskError::RecipientTerminated(_) => RoutingError::RouterTerminated {
                router: self.path().to_string(),
            },
            e => RoutingError::Ask(e),
        }
    }

    /// The routees now, from the shared routing table (empty until the
    /// router has created them; [`RouterRef::current_routees`] waits).
    pub fn routees(&self) -> Vec<ActorRef<M>> {
        self.target.shared.current().refs().to_vec()
    }

    /// Asks the router actor for its routees (Akka's `GetRoutees`), so the
    /// answer is ordered after the management messages sent before.
    pub async fn current_routees(
        &self,
        timeout: Duration,
    ) -> Result<Vec<ActorRef<M>>, RoutingError> {
        self.target
            .control
            .ask(RouterMsg::GetRoutees, timeout)
            .await
            .map_err(|e| self.ask_error(e))
    }

    /// The routees once the router has created them.
    pub(crate) async fn ready_routees(
        &self,
        timeout: Duration,
    ) -> Result<Vec<ActorRef<M>>, RoutingError> {
        let snapshot = self.target.shared.current();
        if snapshot.ready {
            Ok(snapshot.refs().to_vec())
        } else {
            self.current_routees(timeout).await
        }
    }

    /// Adds a routee (see [`RouterMsg::AddRoutee`]).
    pub fn add_routee(&self, routee: ActorRef<M>) {
        self.target.control.tell(RouterMsg::AddRoutee(routee));
    }

    /// Removes a routee (see [`RouterMsg::RemoveRoutee`]).
    pub fn remove_routee(&self, routee: ActorRef<M>) {
        self.target.control.tell(RouterMsg::RemoveRoutee(routee));
    }

    /// Grows or shrinks a pool (see [`RouterMsg::AdjustPoolSize`]).
    pub fn adjust_pool_size(&self, delta: i32) {
        self.target.control.tell(RouterMsg::AdjustPoolSize(delta));
    }

    /// A plain `ActorRef<M>` that routes like this handle.
    pub fn to_actor_ref(&self) -> ActorRef<M> {
        self.routed.clone()
    }

    /// The routed ref, borrowed.
    pub fn as_actor_ref(&self) -> &ActorRef<M> {
        &self.routed
    }

    /// The router actor, for the management protocol.
    pub fn control(&self) -> &ActorRef<RouterMsg<M>> {
        &self.target.control
    }

    /// The router actor's path.
    pub fn path(&self) -> &ActorPath {
        self.routed.path()
    }

    /// True once the router actor has terminated.
    pub fn is_terminated(&self) -> bool {
        self.routed.is_terminated()
    }

    /// Approximate number of messages queued at the routees, summed.
    pub fn mailbox_len(&self) -> usize {
        self.routed.mailbox_len()
    }

    /// Stops the router, and a pool's routees with it, after the management
    /// messages already queued at the router.
    pub fn graceful_stop(&self) {
        self.routed.graceful_stop();
    }

    /// The router actor as an [`AnyRef`].
    pub fn to_any(&self) -> AnyRef {
        self.routed.to_any()
    }
}

impl<M: Send + 'static> Clone for RouterRef<M> {
    fn clone(&self) -> Self {
        RouterRef {
            target: self.target.clone(),
            routed: self.routed.clone(),
        }
    }
}

impl<M: Send + 'static> ToAnyRef for RouterRef<M> {
    fn to_any_ref(&self) -> AnyRef {
        self.to_any()
    }
}

impl<M: Send + 'static> fmt::Debug for RouterRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RouterRef({})", self.routed)
    }
}

impl<M: Send + 'static> fmt::Display for RouterRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.routed, f)
    }
}
