//! The node on the other end of an inbound connection, as its reader
//! sees it, and the count of its incarnation's readers.

use std::sync::Arc;

use volley::remote::RemoteRoute;
use volley::ActorPath;

use crate::transport::cluster::rate::InboundRate;
use crate::transport::control::remote_watch::NoSuchActor;
use crate::transport::inbound::InboundContext;
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::liveness::reachability::PeerDetector;
use crate::transport::node::NOT_CONNECTED_BACK;
use crate::transport::outbound::association::Association;
use crate::transport::outbound::route::RouteHint;
use crate::wire::{Address, Lane};

/// Counts an inbound connection among its incarnation's while it lives
/// (`Incarnations::reader_started`), on every way out of the read loop.
pub(super) struct ReaderGuard<'c, C: InboundContext> {
    core: &'c C,
    association: Arc<Association>,
    pub(super) uid: u64,
}

impl<'c, C: InboundContext> ReaderGuard<'c, C> {
    pub(super) fn new(core: &'c C, association: Arc<Association>, uid: u64) -> Self {
        core.reader_started(&association, uid);
        ReaderGuard {
            core,
            association,
            uid,
        }
    }
}

impl<C: InboundContext> Drop for ReaderGuard<'_, C> {
    fn drop(&mut self) {
        self.core.reader_ended(&self.association, self.uid);
    }
}

/// The node on the other end of an inbound connection.
pub(super) struct Peer {
    pub(super) address: Address,
    /// Its incarnation, from the handshake.
    pub(super) uid: u64,
    /// The lane this connection carries.
    pub(super) lane: Lane,
    /// The system-message ack to send once this read buffer is handled.
    pub(super) ack_due: Option<u64>,
    /// Its association here, looked up once.
    pub(super) association: Option<Arc<Association>>,
    /// Something but a heartbeat was read since the last read.
    pub(super) active: bool,
    /// Its root path, for the paths of its reply handles.
    pub(super) root: ActorPath,
    /// The route every reply handle it declares shares: replies are
    /// addressed by correlation id, so the handles need no state of their
    /// own, and a remote ask costs no route allocation here.
    pub(super) reply_route: Option<Arc<dyn RemoteRoute>>,
    /// Its failure detector, fed by the heartbeats read here; `None` only
    /// when too many nodes are watched already.
    pub(super) detector: Option<Arc<PeerDetector>>,
    /// The cluster frames it may still bring now (`cluster/rate.rs`),
    /// made on its first one.
    pub(super) cluster_rate: Option<InboundRate>,
}

impl Peer {
    pub(super) fn new(
        address: Address,
        uid: u64,
        lane: Lane,
        association: Option<Arc<Association>>,
        root: ActorPath,
        detector: Option<Arc<PeerDetector>>,
    ) -> Self {
        Peer {
            address,
            uid,
            lane,
            ack_due: None,
            association,
            active: false,
            root,
            reply_route: None,
            detector,
            cluster_rate: None,
        }
    }

    pub(super) fn association(&self) -> Option<&Association> {
        self.association.as_deref()
    }

    pub(super) fn reply_route(&mut self, core: &Arc<impl InboundContext>) -> Arc<dyn RemoteRoute> {
        self.make_reply_route(core).clone()
    }

    pub(super) fn make_reply_route(
        &mut self,
        core: &Arc<impl InboundContext>,
    ) -> &Arc<dyn RemoteRoute> {
        // The association was looked up when the connection started;
        // without one, this node does not dial the peer back, and its asks
        // are refused.
        let association = &self.association;
        self.reply_route.get_or_insert_with(|| match association {
            Some(a) => RouteHint::new(core.clone(), Some(a.clone())),
            None => Arc::new(NoSuchActor {
                core: core.clone(),
                refused: Some(NOT_CONNECTED_BACK),
            }),
        })
    }
}
