//! Remote death watch: who watches whom across nodes, so that a watcher gets
//! `Terminated` exactly once, whether the watched actor stops, its node
//! leaves, or the failure detector gives its node up.
//!
//! Both ends keep a table per remote node:
//!
//! - **outgoing** (this node's actors watching actors there): consulted
//!   when a death notice arrives, and emptied at once, each watcher
//!   notified, when the node is given up (`address_terminated`). Taking an
//!   entry out is what makes the notice exactly-once: the second of a
//!   death notice and an address termination finds nothing.
//! - **incoming** (actors there watching this node's actors): each remote
//!   watcher is registered with the local actor as a *watcher proxy*, a
//!   `RemoteRef` to the watcher whose route remembers which actor it
//!   watches, so that the local actor's death notice (which carries only
//!   a uid) leaves with the dead actor's path. When the watching node is
//!   given up, its proxies are unregistered from the local actors.
//!
//! A watch on an actor that is not there is answered by `NoSuchActor`, the
//! route of the placeholder a control connection declares for a path that
//! resolves to nothing: a death notice at once, as Akka answers a watch of
//! a dead actor.

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use volley::remote::{
    deliver_system, watch_key, MessageType, RemoteRef, RemoteRoute, RemoteSendError,
    RemoteSystemMsg,
};
use volley::{ActorPath, AnyRef, DeadLetterReason};

use crate::transport::control::flush::UserLaneFlushes;
use crate::transport::control::system_messages::death_notice_payload;
use crate::transport::control::ControlContext;
use crate::transport::outbound::association::system_buffers::SystemKind;
use crate::transport::outbound::route::RouteHint;
use crate::transport::support::lock;
use crate::wire::Address;

/// How many terminated remote actors `is_terminated` remembers.
const DEAD_ACTORS_REMEMBERED: usize = 4096;

/// Watches between this node and each remote node.
#[derive(Default)]
pub(crate) struct RemoteWatches {
    nodes: Mutex<HashMap<Address, NodeWatches>>,
}

#[derive(Default)]
struct NodeWatches {
    /// (watched remote actor, local watcher).
    outgoing: Vec<(AnyRef, AnyRef)>,
    /// (watched local actor, watcher proxy).
    incoming: Vec<(AnyRef, AnyRef)>,
}

impl RemoteWatches {
    /// Records that local `watcher` watches `watched` on `node`; false if
    /// it already did.
    pub(crate) fn add_outgoing(&self, node: &Address, watched: &AnyRef, watcher: &AnyRef) -> bool {
        let mut nodes = lock(&self.nodes);
        let outgoing = &mut nodes.entry(node.clone()).or_default().outgoing;
        if outgoing.iter().any(|(a, w)| a == watched && w == watcher) {
            return false;
        }
        outgoing.push((watched.clone(), watcher.clone()));
        true
    }

    /// True if an actor here watches one on `node`, or one there watches
    /// one here.
    pub(crate) fn involves(&self, node: &Address) -> bool {
        lock(&self.nodes)
            .get(node)
            .is_some_and(|w| !w.outgoing.is_empty() || !w.incoming.is_empty())
    }

    /// Forgets that `watcher` watches `watched`; true if it did.
    pub(crate) fn remove_outgoing(
        &self,
        node: &Address,
        watched: &AnyRef,
        watcher: &AnyRef,
    ) -> bool {
        let mut nodes = lock(&self.nodes);
        let Some(node) = nodes.get_mut(node) else {
            return false;
        };
        let before = node.outgoing.len();
        node.outgoing
            .retain(|(a, w)| !(a == watched && w == watcher));
        before != node.outgoing.len()
    }

    /// Records (`add`) or forgets a remote watcher of local `watched`.
    pub(crate) fn incoming(&self, node: &Address, watched: &AnyRef, proxy: &AnyRef, add: bool) {
        let mut nodes = lock(&self.nodes);
        let incoming = &mut nodes.entry(node.clone()).or_default().incoming;
        incoming.retain(|(a, w)| !(a == watched && w == proxy));
        if add {
            incoming.push((watched.clone(), proxy.clone()));
        }
    }

    /// A death notice from `node` for local `watcher`: the actor at `path`
    /// with incarnation `uid` has terminated. Every watch of it by
    /// `watcher` ends (a ref with uid 0, "whatever lives at the path",
    /// counts), each with one `Terminated`.
    pub(crate) fn death_notice(
        &self,
        node: &Address,
        watcher: &AnyRef,
        path: &ActorPath,
        uid: u64,
        dead: &DeadActors,
    ) {
        dead.insert(path, uid);
        let ended: Vec<AnyRef> = {
            let mut nodes = lock(&self.nodes);
            let Some(node) = nodes.get_mut(node) else {
                return;
            };
            let mut ended = Vec::new();
            node.outgoing.retain(|(watched, w)| {
                let hit = w == watcher
                    && watched.path() == path
                    && (watched.uid() == uid || watched.uid() == 0);
                if hit {
                    ended.push(watched.clone());
                }
                !hit
            });
            ended
        };
        for watched in ended {
            dead.insert(watched.path(), watched.uid());
            deliver_system(
                watcher,
                RemoteSystemMsg::DeathNotice {
                    uid: watched.watch_key(),
                },
            );
        }
    }

    /// `node` is gone: every local watcher of one of its actors gets
    /// `Terminated`, and its watchers of local actors are unregistered.
    /// Returns how many watches ended.
    pub(crate) fn address_terminated(&self, node: &Address) -> usize {
        let Some(watches) = lock(&self.nodes).remove(node) else {
            return 0;
        };
        for (watched, watcher) in &watches.outgoing {
            deliver_system(
                watcher,
                RemoteSystemMsg::DeathNotice {
                    uid: watched.watch_key(),
                },
            );
        }
        for (watched, proxy) in watches.incoming {
            deliver_system(&watched, RemoteSystemMsg::Unwatch { watcher: proxy });
        }
        watches.outgoing.len()
    }

    /// How many watches of local actors by actors on `node` are
    /// registered.
    pub(crate) fn incoming_count(&self, node: &Address) -> usize {
        lock(&self.nodes).get(node).map_or(0, |w| w.incoming.len())
    }

    /// Forgets an incoming watch once its death notice has left.
    fn incoming_done(&self, node: &Address, proxy: &AnyRef) {
        if let Some(node) = lock(&self.nodes).get_mut(node) {
            node.incoming.retain(|(_, w)| w != proxy);
        }
    }
}

/// Remote actors known to have terminated (by a death notice), for
/// `is_terminated`, by watch key (`volley::remote::watch_key`); the oldest
/// are forgotten past a bound. `ask` asks before every request, so the
/// common case, nothing known dead, is one relaxed load.
///
/// Only incarnations are remembered, never a uid-less ref (from `resolve`:
/// "whatever lives at the path"): the death of the actor that lived there
/// says nothing of the one that may live there by the next message, so a
/// watch of such a ref that ended leaves its asks to be sent (the actor
/// that died stays known dead, by its uid, for refs that carry it).
#[derive(Default)]
pub(crate) struct DeadActors {
    known: AtomicUsize,
    inner: Mutex<(HashSet<u64>, VecDeque<u64>)>,
}

impl DeadActors {
    fn insert(&self, path: &ActorPath, uid: u64) {
        if uid == 0 {
            return;
        }
        let key = watch_key(uid, path);
        let mut inner = lock(&self.inner);
        let (keys, order) = &mut *inner;
        if keys.insert(key) {
            order.push_back(key);
            if order.len() > DEAD_ACTORS_REMEMBERED {
                if let Some(oldest) = order.pop_front() {
                    keys.remove(&oldest);
                }
            }
            self.known.store(keys.len(), Ordering::Relaxed);
        }
    }

    pub(crate) fn contains(&self, path: &ActorPath, uid: u64) -> bool {
        if uid == 0 || self.known.load(Ordering::Relaxed) == 0 {
            return false;
        }
        lock(&self.inner).0.contains(&watch_key(uid, path))
    }
}

/// The route of a watcher proxy: a remote watcher as a local actor's
/// watcher list holds it. Messages go the ordinary way; the death notice
/// leaves naming the watched actor.
struct WatcherRoute<C: ControlContext> {
    core: Arc<C>,
    inner: Arc<RouteHint<C>>,
    node: Address,
    /// The local actor watched.
    watched_path: String,
    /// The watched actor's uid here, which its death notification names.
    watched_uid: u64,
    /// Its uid as the peer knows it, which the death notice names: the
    /// same, but for an ask's reply handle, known by its correlation id.
    exported_uid: u64,
}

/// Watcher proxies, for any node with a control context.
pub(crate) trait WatcherProxies: ControlContext {
    /// The proxy through which `watcher` (an actor on `node`) watches local
    /// `watched`. Equal (path and uid) to `watcher`, so an unwatch through
    /// any ref to the watcher finds it.
    fn watcher_proxy(
        self: &Arc<Self>,
        node: &Address,
        watched: &AnyRef,
        watcher: AnyRef,
    ) -> AnyRef {
        let Some(remote) = watcher.as_remote() else {
            // A local watcher named by the peer: nothing to proxy.
            return watcher;
        };
        let route = Arc::new(WatcherRoute {
            core: self.clone(),
            inner: RouteHint::new(self.clone(), self.association(node).ok()),
            node: node.clone(),
            watched_path: self.export_path(watched),
            watched_uid: watched.uid(),
            exported_uid: self.export_uid(watched),
        });
        RemoteRef::new(
            remote.path().clone(),
            remote.uid(),
            self.system().clone(),
            route,
        )
        .to_any()
    }
}

impl<C: ControlContext> WatcherProxies for C {}

impl<C: ControlContext> RemoteRoute for WatcherRoute<C> {
    fn send(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
    ) -> Result<(), Box<RemoteSendError>> {
        self.inner.send(target, msg, ty)
    }

    // User messages go the ordinary way, their trace context included.
    fn send_traced(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
        context: &volley::TraceParent,
    ) -> Result<(), Box<RemoteSendError>> {
        self.inner.send_traced(target, msg, ty, context)
    }

    fn send_system(&self, target: &RemoteRef, msg: RemoteSystemMsg) {
        match msg {
            RemoteSystemMsg::DeathNotice { uid } if uid == self.watched_uid => {
                let Some(me) = target.any() else { return };
                self.core.remote_watches().incoming_done(&self.node, &me);
                let Ok(association) = self.core.association(&self.node) else {
                    return;
                };
                let payload = death_notice_payload(self.exported_uid, &self.watched_path);
                // After what the actor sent there (`control/flush.rs`). A node that
                // is gone gets nothing: its watchers were notified when it
                // was given up.
                let core = self.core.clone();
                let notified = association.clone();
                self.core.after_user_lanes_flushed(&association, move || {
                    let _ =
                        core.send_reliably(&notified, SystemKind::DeathNotice, me, None, payload);
                });
            }
            other => self.inner.send_system(target, other),
        }
    }

    fn room(&self, target: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.inner.room(target)
    }

    fn is_terminated(&self, target: &RemoteRef) -> bool {
        self.inner.is_terminated(target)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The route of a ref a peer declared that names no actor here (on a
/// control connection), or that this node will not send to (`refused`: a
/// node it may not dial, see `handshake/trust.rs`): a watch is answered with a death
/// notice at once, so nothing waits for it; anything else is a dead letter.
pub(crate) struct NoSuchActor<C: ControlContext> {
    pub(crate) core: Arc<C>,
    /// Why this node will not send to it, logged (rate-limited) per message.
    pub(crate) refused: Option<&'static str>,
}

impl<C: ControlContext> NoSuchActor<C> {
    /// What a control connection binds a declared `path` that names no
    /// actor here to, so that a watch through it is answered at once.
    pub(crate) fn placeholder(core: &Arc<C>, path: &str, uid: u64) -> Option<AnyRef> {
        let path = ActorPath::parse(path).ok()?;
        let route = Arc::new(NoSuchActor {
            core: core.clone(),
            refused: None,
        });
        Some(RemoteRef::new(path, uid, core.system().clone(), route).to_any())
    }
}

impl<C: ControlContext> RemoteRoute for NoSuchActor<C> {
    fn send(
        &self,
        target: &RemoteRef,
        _msg: &(dyn Any + Send),
        ty: &MessageType,
    ) -> Result<(), Box<RemoteSendError>> {
        if let (Some(reason), Ok(node)) = (
            self.refused,
            crate::transport::node::address_of(target.path()),
        ) {
            let what = format!("{} to {}: {reason}", ty.name, target.path());
            self.core.trust().log_refused(&node, &what);
        }
        self.core
            .system()
            .dead_letter(target.path(), ty.name, DeadLetterReason::Undeliverable);
        Ok(())
    }

    fn send_system(&self, target: &RemoteRef, msg: RemoteSystemMsg) {
        if let RemoteSystemMsg::Watch { watcher } = msg {
            deliver_system(&watcher, RemoteSystemMsg::DeathNotice { uid: target.uid() });
        }
    }

    fn room(&self, _target: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }

    fn is_terminated(&self, _target: &RemoteRef) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
