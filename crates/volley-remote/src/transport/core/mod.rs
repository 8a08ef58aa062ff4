//! `RemotingCore`: the state one node's remoting shares between its
//! facade, routes, lanes, writers and readers.
//!
//! It owns the associations, the reply handles waiting for remote answers,
//! the pending remote spawns, the failure detectors of the nodes it hears
//! from and the background tasks; it resolves what
//! peers declare into refs; and it counts what cannot be delivered.

mod contexts;
mod monitor;

pub(crate) use monitor::run_monitor;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::task::JoinHandle;
use volley::remote::{LogLimiter, RemoteRef, RemoteSendError};
use volley::{ActorPath, ActorSystem, AnyRef, DeadLetterReason};

use crate::transport::admission::probe::Probes;
use crate::transport::control::remote_spawn::SpawnRequests;
use crate::transport::control::remote_watch::NoSuchActor;
use crate::transport::control::remote_watch::{DeadActors, RemoteWatches};
use crate::transport::control::reply_handles::ReplyHandles;
use crate::transport::handshake::auth::Secret;
use crate::transport::handshake::tls::TlsContext;
use crate::transport::handshake::trust::Trust;
use crate::transport::idle::Idleness;
use crate::transport::liveness::reachability::Reachability;
use crate::transport::node::{address_of, authority_of, Undeliverable, NOT_CONNECTED_BACK};
use crate::transport::outbound::association::Origin;
use crate::transport::outbound::association::{Association, Associations};
use crate::transport::outbound::route::RouteHint;
use crate::transport::refs::tables::is_local_reply_handle;
use crate::transport::registry::Registry;
use crate::transport::settings::RemoteSettings;
use crate::transport::support::lock;
use crate::wire::{Address, Disassociate, DisassociateReason, Lane, Pdu};

/// Why a ref a peer declared on a third node is not sent to.
const NOT_DIALED_DECLARED: &str = "a peer's declaration may not make this node dial a node it has no association with (trust.dial_declared_nodes, trust.known_peers)";

/// At most this many warnings a second about undeliverable messages; the
/// rest are only counted as dead letters.
const UNDELIVERABLE_LOG_PER_SECOND: u32 = 10;

// The import tables count a route as this many bytes.
const _: () = assert!(
    std::mem::size_of::<RouteHint<RemotingCore>>()
        <= crate::transport::refs::tables::import_bytes::ROUTE_BYTES
);

pub(crate) struct RemotingCore {
    pub(crate) system: ActorSystem,
    pub(crate) settings: RemoteSettings,
    pub(crate) registry: Registry,
    pub(crate) address: Address,
    /// `host:port` of `address`, as it appears in paths.
    pub(crate) authority: String,
    /// This node's incarnation.
    pub(crate) uid: u64,
    /// When it started (`liveness/order.rs`).
    pub(crate) stamp: u64,
    pub(crate) me: Weak<RemotingCore>,
    pub(crate) associations: Associations,
    pub(crate) reply_handles: ReplyHandles,
    pub(crate) spawns: SpawnRequests,
    pub(crate) reachability: Reachability,
    /// The cluster's membership authority, once set (`liveness/authority.rs`).
    pub(crate) membership: crate::transport::liveness::authority::Membership,
    pub(crate) remote_watches: RemoteWatches,
    pub(crate) dead_actors: DeadActors,
    /// Flushes of user lanes that death notices wait for (`control/flush.rs`).
    pub(crate) flushes: crate::transport::control::flush::Flushes,
    /// What peers may make this node do (`[remote.trust]`).
    pub(crate) trust: Trust,
    /// The shared secret every connection proves, if configured.
    pub(crate) secret: Option<Secret>,
    /// TLS both ways, if configured.
    pub(crate) tls: Option<TlsContext>,
    /// Checks of the addresses nodes that dial in claim.
    pub(crate) probes: Probes,
    /// The inbound connections of each incarnation, ended at once when it
    /// is gone (`inbound/ends.rs`).
    pub(crate) inbound_lives: crate::transport::inbound::ends::InboundLives,
    /// What the refs peers declared on the open connections keep.
    pub(crate) import_meter: Arc<crate::transport::refs::tables::import_bytes::ImportMeter>,
    shut_down: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    undeliverable_log: LogLimiter,
    /// Warnings about failed connections, of all this node's lanes
    /// together (`outbound/writer.rs`).
    pub(crate) connect_warnings: LogLimiter,
    /// The cluster's hook, if this node is in one, and the counts of
    /// cluster frames (`cluster/`).
    pub(crate) cluster: crate::transport::cluster::port::ClusterPort,
}

impl RemotingCore {
    pub(crate) fn new(
        system: &ActorSystem,
        settings: RemoteSettings,
        registry: Registry,
        address: Address,
        tls: Option<TlsContext>,
    ) -> Arc<Self> {
        let authority = authority_of(&address).into_owned();
        let reachability = Reachability::new(
            &settings.failure_detector,
            crate::transport::settings::reconnect::longest_pause(&settings),
        );
        let trust = Trust::new(&settings.trust, settings.secret.is_some());
        let secret = settings.secret.as_deref().map(Secret::new);
        Arc::new_cyclic(|me| RemotingCore {
            system: system.clone(),
            settings,
            registry,
            address,
            authority,
            uid: volley::remote::random_uid() | 1,
            stamp: crate::transport::liveness::order::start_stamp(),
            me: me.clone(),
            associations: Associations::new()
                .metered(system.settings().metrics.enabled.then(|| system.name())),
            reply_handles: ReplyHandles::default(),
            spawns: SpawnRequests::default(),
            reachability,
            membership: Default::default(),
            remote_watches: RemoteWatches::default(),
            dead_actors: DeadActors::default(),
            flushes: Default::default(),
            trust,
            secret,
            tls,
            probes: Probes::new(system.settings().metrics.enabled.then(|| system.name())),
            inbound_lives: Default::default(),
            import_meter: Default::default(),
            shut_down: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            undeliverable_log: LogLimiter::new(UNDELIVERABLE_LOG_PER_SECOND),
            connect_warnings: LogLimiter::new(
                crate::transport::outbound::writer::CONNECT_WARNINGS_PER_SECOND,
            ),
            cluster: Default::default(),
        })
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Relaxed)
    }

    /// Keeps a background task's handle so that shutdown can stop it.
    pub(crate) fn track(&self, task: JoinHandle<()>) {
        let mut tasks = lock(&self.tasks);
        // A finished task's handle would keep its memory: one per inbound
        // connection ever accepted. Swept when the list is about to grow,
        // so the sweeps cost O(1) per task tracked, and the list stays
        // within twice the tasks alive.
        if tasks.len() == tasks.capacity() {
            tasks.retain(|t| !t.is_finished());
        }
        tasks.push(task);
    }

    /// The association to `remote`, started by this node (its code named
    /// the address, the address is configured, or it passed the address
    /// check); a new association starts one writer task per lane and its
    /// heartbeats.
    pub(crate) fn association(
        &self,
        remote: &Address,
    ) -> Result<Arc<Association>, RemoteSendError> {
        self.associate(remote, Origin::Vouched)
    }

    /// The association to `remote`; a new one started on `origin`'s say.
    pub(crate) fn associate(
        &self,
        remote: &Address,
        origin: Origin,
    ) -> Result<Arc<Association>, RemoteSendError> {
        if self.me.strong_count() == 0 {
            return Err(RemoteSendError::Unavailable("remoting is shut down".into()));
        }
        self.associations
            .get_or_create(remote, &self.settings, |association| {
                let now = std::time::Instant::now();
                // Judged from now: a node that never sends a heartbeat is
                // given up like one that stopped (Akka's
                // `expected-response-after`), once a reconnect pause of
                // its own has had time to end.
                self.reachability.expect(remote, now);
                let mut tasks = lock(&association.tasks);
                if origin == Origin::PeersWord {
                    tasks.await_proof(now);
                }
                self.start_tasks(association, &mut tasks);
            })
    }

    /// A ref to the remote actor at `path`, with its association already
    /// known when `association` is given.
    pub(crate) fn remote_ref(
        self: &Arc<Self>,
        path: ActorPath,
        uid: u64,
        association: Option<Arc<Association>>,
    ) -> Arc<RemoteRef> {
        if uid != 0 {
            // An actor with a uid belongs to the node's current incarnation
            // (the one that declared it, or answered the spawn).
            let found;
            let known = match &association {
                Some(a) => Some(a),
                None => {
                    found = address_of(&path)
                        .ok()
                        .and_then(|a| self.associations.find(&a));
                    found.as_ref()
                }
            };
            let incarnation = known.and_then(|a| lock(&a.control).uid);
            let route = RouteHint::new(self.clone(), association);
            if let Some(incarnation) = incarnation {
                route.bind_incarnation(incarnation);
            }
            return RemoteRef::new(path, uid, self.system.clone(), route);
        }
        let route = RouteHint::new(self.clone(), association);
        RemoteRef::new(path, uid, self.system.clone(), route)
    }

    /// The path under which `actor` is known to other nodes; registers an
    /// ask's reply handle so that the reply can find it.
    pub(crate) fn export_path(&self, actor: &AnyRef) -> String {
        if is_local_reply_handle(actor) {
            // Known to peers by its correlation id, never by its uid (the
            // one it had, if its ask has ended).
            let correlation = self.reply_handles.correlation_of(actor);
            return actor
                .path()
                .reply_handle(correlation)
                .to_string_with_authority(&self.authority);
        }
        actor.path().to_string_with_authority(&self.authority)
    }

    /// What a peer's declaration points at: a local actor (by path and
    /// incarnation), an ask's reply handle, or a ref to another node.
    ///
    /// `peer` is the node that declared the ref, with `peer_association`
    /// its association, if this node dials it back: a ref that lives on
    /// the declaring node (the usual case: a reply-to) gets its route
    /// without an address lookup; without an association, a ref that
    /// refuses what is sent to it.
    ///
    /// A uid-less ref to a trusted path of this node (the peer resolved
    /// it) also leaves that path in `selection`, whether an actor is there
    /// or not: its messages go to whoever lives there when they arrive.
    pub(crate) fn resolve_declared(
        self: &Arc<Self>,
        path: &str,
        uid: u64,
        peer: &Address,
        peer_association: Option<&Arc<Association>>,
        selection: &mut Option<ActorPath>,
    ) -> Option<AnyRef> {
        let parsed = ActorPath::parse(path).ok()?;
        let authority = parsed.authority()?;
        if authority == self.authority && parsed.system() == self.system.name() {
            if parsed.is_reply_handle() {
                // Passed back by path (a node the request was forwarded to
                // answers): the handle stays registered, since a ref may
                // be declared again (on each new connection); it is swept
                // out once answered.
                return self.reply_handles.find(uid);
            }
            if !self.trust.may_receive(parsed.elements()) {
                let what = format!("{path} is not among trust.trusted_paths (untrusted mode)");
                self.trust.refused(&**self, peer, &what);
                return None;
            }
            let actor = self.system.lookup(parsed.elements()).ok().flatten();
            if uid == 0 {
                *selection = Some(parsed);
                return actor;
            }
            actor.filter(|actor| actor.uid() == uid)
        } else {
            let on_peer = authority == authority_of(peer) && parsed.system() == peer.system();
            if on_peer {
                // The connection's association was settled by its
                // handshake: none means this node does not dial the peer
                // back, and a declaration must not change that.
                return Some(match peer_association {
                    Some(association) => self
                        .remote_ref(parsed, uid, Some(association.clone()))
                        .to_any(),
                    None => self.not_dialed(parsed, uid, NOT_CONNECTED_BACK),
                });
            }
            let node = address_of(&parsed).ok()?;
            Some(self.declared_elsewhere(parsed, uid, &node))
        }
    }

    /// A ref a peer declared on `node`, a third node: reachable if this
    /// node talks to `node` already or may dial it (`handshake/trust.rs`); dialed on
    /// the peer's word alone only with `dial_declared_nodes`, and then
    /// let go of if `node` never answers (`idle/proof.rs`).
    fn declared_elsewhere(self: &Arc<Self>, parsed: ActorPath, uid: u64, node: &Address) -> AnyRef {
        let association = self.associations.find(node);
        if !self.trust.may_dial_declared(node, association.is_some()) {
            return self.not_dialed(parsed, uid, NOT_DIALED_DECLARED);
        }
        if association.is_none() && !self.trust.is_known_peer(node) {
            let route = RouteHint::on_peers_word(self.clone());
            return RemoteRef::new(parsed, uid, self.system.clone(), route).to_any();
        }
        self.remote_ref(parsed, uid, association).to_any()
    }

    /// A ref this node will not send to (`NoSuchActor`, refusing).
    pub(crate) fn not_dialed(
        self: &Arc<Self>,
        path: ActorPath,
        uid: u64,
        reason: &'static str,
    ) -> AnyRef {
        let route = Arc::new(NoSuchActor {
            core: self.clone(),
            refused: Some(reason),
        });
        RemoteRef::new(path, uid, self.system.clone(), route).to_any()
    }

    /// The local actor a full path names, if the path is this node's.
    pub(crate) fn resolve_local_path(&self, path: &ActorPath) -> Option<AnyRef> {
        (path.authority() == Some(self.authority.as_str()) && path.system() == self.system.name())
            .then(|| self.system.lookup(path.elements()).ok().flatten())
            .flatten()
    }

    /// Counts a message from or to `peer` as a dead letter.
    pub(crate) fn count_dead_letter(&self, peer: &Address, reason: DeadLetterReason) {
        if let Ok(path) = ActorPath::parse(&format!("{peer}/")) {
            self.system.dead_letter(&path, "remote message", reason);
        }
    }

    /// A message read from `peer` that cannot be delivered: counted, and
    /// logged within the rate limit.
    pub(crate) fn undeliverable(&self, peer: &Address, why: Undeliverable) {
        if self.undeliverable_log.allow() {
            tracing::warn!(%peer, "undeliverable remote message: {why}");
        }
        self.count_dead_letter(peer, DeadLetterReason::Undeliverable);
    }

    /// Leaves gracefully: waits (within `shutdown_flush_timeout`) until
    /// what is queued to each reachable node is written, tells each that
    /// this node shuts down (a Disassociate on every lane, behind the
    /// queued frames, so no frame is cut), then stops.
    pub(crate) async fn leave(&self) {
        // After `Remoting::shutdown` nobody is told goodbye, but the
        // aborted tasks are still waited for.
        if !self.is_shut_down() {
            self.say_goodbye().await;
        }
        self.stop_and_wait().await;
    }

    /// Flushes what the live associations hold, tells each peer goodbye,
    /// and counts what could not be written as dead letters.
    async fn say_goodbye(&self) {
        let deadline = tokio::time::Instant::now() + self.settings.shutdown_flush_timeout;
        let all = self.associations.all();
        let live: Vec<&Association> = all
            .iter()
            .map(|a| &**a)
            .filter(|a| !a.is_down() && !a.is_retired())
            .collect();
        let flushed = self.flush(&live, deadline).await;
        let goodbye = Pdu::Disassociate(Disassociate {
            reason: DisassociateReason::Shutdown,
            text: "the actor system is terminating",
        });
        for association in &live {
            for lane in association.lanes() {
                let _ = lane.send_pdu(self, &goodbye);
            }
        }
        let said = self.flush(&live, deadline).await;
        let unwritten = self.discard_unwritten(&live);
        if !(flushed && said) || unwritten > 0 {
            tracing::warn!(
                unwritten,
                "remoting shut down before everything queued was written (shutdown_flush_timeout = {:?}); the unwritten messages are counted as dead letters",
                self.settings.shutdown_flush_timeout
            );
        }
    }

    /// Stops every task and waits until they are gone.
    async fn stop_and_wait(&self) {
        self.shut_down();
        let tasks: Vec<_> = lock(&self.tasks).drain(..).collect();
        // Gone once `terminate` returns: the listener's port is free and no
        // connection of this node is left open. An aborted task ends at its
        // next poll, which on a loaded machine can come more than a second
        // later (a restart on the same port then found it still bound), so
        // the wait is long; only a task stuck outside an await reaches it.
        let stopped = join_all(tasks);
        if tokio::time::timeout(TASKS_STOP_WITHIN, stopped)
            .await
            .is_err()
        {
            tracing::warn!(
                "some remoting tasks did not stop within {TASKS_STOP_WITHIN:?} of being aborted"
            );
        }
    }

    /// Waits until every lane of `associations` that has a connection is
    /// drained, and every one still connecting with something queued has
    /// connected and drained, or `deadline`; true if all were. A lane
    /// whose last attempt failed counts only while its node answers on
    /// the control lane (a node that was killed closed that connection, and
    /// its failure detector may still call it reachable for seconds).
    async fn flush(&self, associations: &[&Association], deadline: tokio::time::Instant) -> bool {
        loop {
            let busy = associations.iter().any(|a| {
                let alive = a.lane(Lane::Control).is_connected();
                a.lanes().iter().any(|lane| lane.awaits_flush(alive))
            });
            if !busy {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    /// Drops what the lanes of `associations` still hold after the leave's
    /// flush, each message a counted dead letter (nothing is dropped
    /// silently at shutdown); returns how many.
    fn discard_unwritten(&self, associations: &[&Association]) -> usize {
        associations
            .iter()
            .flat_map(|a| a.lanes())
            .map(|lane| lane.discard_queued(self))
            .sum()
    }

    /// Stops every task and closes every connection. The aborted tasks'
    /// handles stay tracked, so that `leave` (the system's termination)
    /// waits for them even after an earlier `Remoting::shutdown`, which
    /// returns at once: an aborted task (the listener's among them) ends
    /// at its next poll, and only then is its port free.
    pub(crate) fn shut_down(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        for task in lock(&self.tasks).iter() {
            task.abort();
        }
        // A connection parked in its lane is owned by no task: close it here.
        for association in self.associations.all() {
            for lane in association.lanes() {
                lane.close();
            }
        }
    }
}

/// How long `terminate` waits for the aborted tasks to end.
const TASKS_STOP_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits for every task in `tasks` to end.
async fn join_all(tasks: Vec<JoinHandle<()>>) {
    for task in tasks {
        let _ = task.await;
    }
}
