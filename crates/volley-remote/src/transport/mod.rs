//! The TCP transport: associations, lanes, listener, remote spawn.
//!
//! One association per remote node, with three outbound connections (lanes)
//! as in Artery: control (spawn requests, later system messages and
//! heartbeats), ordinary, and large messages, so neither control traffic
//! nor small messages queue behind a big one. Each side opens its own
//! outbound connections; an inbound connection only reads.

mod delivery;
mod handshake;
mod inbound;
mod outbound;
mod registry;
mod settings;
mod writer;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use volley::remote::{RemoteRef, RemoteSendError, RemoteTransport};
use volley::{ActorPath, ActorRef, ActorSystem, AnyRef, DeadLetterReason};

pub use registry::{Registry, RegistryError};
pub use settings::{BatchingSettings, RemoteSettings, RemoteSettingsError};

use crate::serialization::{BincodeSerializer, Serializer, SerializerId};
use crate::wire::{Address, Lane, Pdu, SpawnRequest};
use outbound::OutboundLane;

/// Most remote nodes one system can talk to (slots for lock-free lookup).
const MAX_ASSOCIATIONS: usize = 4096;

/// Why remoting could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Bad `[remote]` settings.
    #[error(transparent)]
    Settings(#[from] RemoteSettingsError),
    /// The listener could not bind.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Where.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The canonical address is invalid.
    #[error("invalid canonical address: {0}")]
    Address(#[from] crate::wire::AddressError),
    /// The actor system is already terminated.
    #[error("the actor system has terminated")]
    SystemTerminated,
}

/// Why a remote spawn failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteSpawnError {
    /// The remote node refused or failed (disabled, unknown kind, bad name…).
    #[error("remote spawn failed: {0}")]
    Refused(String),
    /// No answer in time.
    #[error("remote spawn timed out after {0:?}")]
    Timeout(Duration),
    /// The request could not be sent.
    #[error("remote spawn could not be sent: {0}")]
    Send(String),
}

/// Why a path could not be turned into a remote ref.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The path is malformed.
    #[error(transparent)]
    Path(#[from] volley::PathError),
    /// The path has no `@host:port`.
    #[error("{0} names no node (expected volley://system@host:port/...)")]
    NoAuthority(String),
    /// The node part is not a valid address.
    #[error(transparent)]
    Address(#[from] crate::wire::AddressError),
}

pub(crate) struct Association {
    lanes: [Arc<OutboundLane>; 3],
}

impl Association {
    pub(crate) fn control(&self) -> &Arc<OutboundLane> {
        &self.lanes[0]
    }
    fn ordinary(&self) -> &Arc<OutboundLane> {
        &self.lanes[1]
    }
    fn large(&self) -> &Arc<OutboundLane> {
        &self.lanes[2]
    }
}

type SpawnWaiter = oneshot::Sender<Result<(String, u64), String>>;

pub(crate) struct Shared {
    pub(crate) system: ActorSystem,
    pub(crate) settings: RemoteSettings,
    pub(crate) registry: Registry,
    pub(crate) address: Address,
    authority: String,
    pub(crate) uid: u64,
    me: Weak<Shared>,
    associations: Mutex<HashMap<Address, usize>>,
    slots: Box<[OnceLock<Arc<Association>>]>,
    next_slot: AtomicUsize,
    temp_refs: Mutex<HashMap<u64, AnyRef>>,
    spawn_waiters: Mutex<HashMap<u64, SpawnWaiter>>,
    next_request: AtomicU64,
    shut_down: AtomicBool,
    tasks: Mutex<Vec<AbortHandle>>,
    log_window: Mutex<(Instant, u32)>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Relaxed)
    }

    pub(crate) fn track(&self, task: AbortHandle) {
        lock(&self.tasks).push(task);
    }

    /// The association to `remote`, created (with its writer tasks) on first
    /// use.
    pub(crate) fn association(
        self: &Arc<Self>,
        remote: &Address,
    ) -> Result<Arc<Association>, RemoteSendError> {
        let slot = self.association_slot(remote)?;
        Ok(self.slots[slot]
            .get()
            .expect("a slot is filled before its index is published")
            .clone())
    }

    /// The slot of the association to `remote`; slots are never reused, so
    /// a route cached in a ref stays right. Fails once `MAX_ASSOCIATIONS`
    /// nodes have been talked to.
    pub(crate) fn association_slot(
        self: &Arc<Self>,
        remote: &Address,
    ) -> Result<usize, RemoteSendError> {
        let mut map = lock(&self.associations);
        if let Some(slot) = map.get(remote) {
            return Ok(*slot);
        }
        let slot = self.next_slot.load(Ordering::Relaxed);
        if slot >= MAX_ASSOCIATIONS {
            return Err(RemoteSendError::Unavailable(format!(
                "cannot associate with {remote}: this node already talks to {MAX_ASSOCIATIONS} nodes"
            )));
        }
        self.next_slot.store(slot + 1, Ordering::Relaxed);
        let s = &self.settings;
        let make = |lane: Lane, max: u32| {
            Arc::new(OutboundLane::new(lane, remote.clone(), max, &s.batching))
        };
        let association = Arc::new(Association {
            lanes: [
                make(Lane::Control, s.large_message_threshold),
                make(Lane::Ordinary, s.large_message_threshold),
                make(Lane::Large, s.max_frame_size),
            ],
        });
        for lane in &association.lanes {
            let task = self
                .system
                .runtime_handle()
                .spawn(writer::run_writer(lane.clone(), self.clone()));
            self.track(task.abort_handle());
        }
        let _ = self.slots[slot].set(association);
        map.insert(remote.clone(), slot);
        Ok(slot)
    }

    /// The association towards `target`'s node. The fast path is one load
    /// of the slot index cached in the ref and one of the slot: no lock, no
    /// reference count.
    /// The association a ref's messages go through. The route is cached in
    /// the ref, so the common case is two loads; the lookup by address is
    /// kept out of line so that this inlines into every send.
    #[inline]
    fn association_for(&self, target: &RemoteRef) -> Result<&Association, RemoteSendError> {
        let hint = target.route_hint.load(Ordering::Relaxed) as usize;
        if hint != 0 {
            if let Some(a) = self.slots[hint - 1].get() {
                return Ok(a);
            }
        }
        self.route(target)
    }

    #[cold]
    #[inline(never)]
    fn route(&self, target: &RemoteRef) -> Result<&Association, RemoteSendError> {
        let me = self
            .me
            .upgrade()
            .ok_or_else(|| RemoteSendError::Unavailable("remoting is shut down".into()))?;
        let address =
            address_of(target.path()).map_err(|e| RemoteSendError::Unavailable(e.to_string()))?;
        let slot = me.association_slot(&address)?;
        target.route_hint.store(slot as u64 + 1, Ordering::Relaxed);
        Ok(self.slots[slot].get().expect("filled"))
    }

    /// The path under which `actor` is known to other nodes; registers an
    /// ask's temporary reply handle so that the reply can find it.
    pub(crate) fn export_path(&self, actor: &AnyRef) -> String {
        if outbound::is_local_temporary(actor) {
            self.register_reply_handle(actor);
        }
        actor.path().to_string_with_authority(&self.authority)
    }

    /// Lets replies (by correlation id or by path) find an ask's handle.
    pub(crate) fn register_reply_handle(&self, actor: &AnyRef) {
        let mut temp = lock(&self.temp_refs);
        if temp.len() >= 1024 && temp.len().is_power_of_two() {
            temp.retain(|_, a| !a.is_terminated());
        }
        temp.insert(actor.uid(), actor.clone());
    }

    /// The waiting ask handle `correlation`, taken out: it accepts one
    /// reply.
    pub(crate) fn take_reply_handle(&self, correlation: u64) -> Option<AnyRef> {
        lock(&self.temp_refs)
            .remove(&correlation)
            .filter(|a| !a.is_terminated())
    }

    /// What a peer's declaration points at: a local actor (by path and
    /// incarnation), an ask's reply handle, or a ref to another node.
    ///
    /// `peer` is the node that declared the ref, with `peer_slot` the cache
    /// of its association slot: a ref that lives on the declaring node (the
    /// usual case: a reply-to) gets its route without an address lookup.
    pub(crate) fn resolve_declared(
        self: &Arc<Self>,
        path: &str,
        uid: u64,
        peer: &Address,
        peer_slot: &mut Option<usize>,
    ) -> Option<AnyRef> {
        let parsed = ActorPath::parse(path).ok()?;
        let authority = parsed.authority()?;
        if authority == self.authority && parsed.system() == self.system.name() {
            if parsed.elements().starts_with("/temp/") {
                return self.take_reply_handle(uid);
            }
            let actor = self.system.lookup(parsed.elements()).ok()??;
            (uid == 0 || actor.uid() == uid).then_some(actor)
        } else {
            let on_peer = authority == peer_authority(peer) && parsed.system() == peer.system();
            let remote = RemoteRef::new(parsed, uid, self.system.clone(), self.clone());
            if on_peer {
                if peer_slot.is_none() {
                    *peer_slot = self.association_slot(peer).ok();
                }
                if let Some(slot) = *peer_slot {
                    remote.route_hint.store(slot as u64 + 1, Ordering::Relaxed);
                }
            }
            Some(remote.to_any())
        }
    }

    pub(crate) fn count_dead_letter(&self, peer: &Address, reason: DeadLetterReason) {
        if let Ok(path) = ActorPath::parse(&format!("{peer}/")) {
            self.system.dead_letter(&path, "remote message", reason);
        }
    }

    /// At most ten warnings a second about undeliverable messages.
    pub(crate) fn may_log(&self) -> bool {
        let mut w = lock(&self.log_window);
        if w.0.elapsed() > Duration::from_secs(1) {
            *w = (Instant::now(), 0);
        }
        w.1 += 1;
        w.1 <= 10
    }

    pub(crate) fn complete_spawn(&self, request_id: u64, outcome: Result<(String, u64), String>) {
        if let Some(waiter) = lock(&self.spawn_waiters).remove(&request_id) {
            let _ = waiter.send(outcome);
        }
    }
}

/// `host:port` of an address as it appears in paths (IPv6 in brackets).
fn peer_authority(peer: &Address) -> std::borrow::Cow<'_, str> {
    if peer.host().contains(':') {
        format!("[{}]:{}", peer.host(), peer.port()).into()
    } else {
        format!("{}:{}", peer.host(), peer.port()).into()
    }
}

/// `volley://system@host:port` of a remote path.
fn address_of(path: &ActorPath) -> Result<Address, ResolveError> {
    let authority = path
        .authority()
        .ok_or_else(|| ResolveError::NoAuthority(path.to_string()))?;
    Ok(format!("volley://{}@{}", path.system(), authority).parse()?)
}

impl RemoteTransport for Shared {
    fn send(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        type_id: TypeId,
        type_name: &'static str,
    ) -> Result<(), RemoteSendError> {
        let ty = self
            .registry
            .outbound_for(type_id, &target.type_hint)
            .ok_or(RemoteSendError::Unregistered(type_name))?;
        if self.is_shut_down() {
            return Err(RemoteSendError::Unavailable("remoting is shut down".into()));
        }
        let association = self.association_for(target)?;
        match association.ordinary().send_user(self, target, ty, msg)? {
            Ok(()) => Ok(()),
            Err(outbound::TooBigForLane(_)) => {
                match association.large().send_user(self, target, ty, msg)? {
                    Ok(()) => Ok(()),
                    Err(outbound::TooBigForLane(size)) => Err(RemoteSendError::TooLarge {
                        size,
                        limit: self.settings.max_frame_size as usize,
                    }),
                }
            }
        }
    }

    fn room(&self, target: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let lane = self
            .association_for(target)
            .ok()
            .map(|a| a.ordinary().clone());
        Box::pin(async move {
            if let Some(lane) = lane {
                lane.room().await;
            }
        })
    }

    fn is_full(&self, target: &RemoteRef) -> bool {
        self.association_for(target)
            .is_ok_and(|a| a.ordinary().is_full())
    }
}

/// Remoting for one actor system: start it with [`Remoting::start`].
#[derive(Clone)]
pub struct Remoting {
    shared: Arc<Shared>,
}

impl Remoting {
    /// Starts listening with the `[remote]` section of the system's settings.
    pub async fn start(system: &ActorSystem, registry: Registry) -> Result<Remoting, StartError> {
        let settings = RemoteSettings::from_system_settings(system.settings())?;
        Self::start_with(system, registry, settings).await
    }

    /// Starts listening with explicit settings.
    pub async fn start_with(
        system: &ActorSystem,
        registry: Registry,
        settings: RemoteSettings,
    ) -> Result<Remoting, StartError> {
        settings.validate()?;
        if system.is_terminated() {
            return Err(StartError::SystemTerminated);
        }
        let bind = format!("{}:{}", settings.bind_host, settings.port);
        let bind2 = bind.clone();
        let listener = system
            .runtime_handle()
            .spawn(async move { tokio::net::TcpListener::bind(bind2).await })
            .await
            .map_err(|_| StartError::SystemTerminated)?
            .map_err(|source| StartError::Bind {
                addr: bind.clone(),
                source,
            })?;
        let bound = listener.local_addr().map_err(|source| StartError::Bind {
            addr: bind.clone(),
            source,
        })?;
        let host = settings
            .canonical_host
            .clone()
            .unwrap_or_else(|| settings.bind_host.clone());
        let port = settings.canonical_port.unwrap_or(bound.port());
        let address = Address::new(system.name(), host, port)?;
        let authority = address
            .to_string()
            .split_once('@')
            .map(|(_, a)| a.to_string())
            .unwrap_or_default();
        let shared = Arc::new_cyclic(|me| Shared {
            system: system.clone(),
            settings,
            registry,
            address,
            authority,
            uid: random_uid(),
            me: me.clone(),
            associations: Mutex::new(HashMap::new()),
            slots: (0..MAX_ASSOCIATIONS).map(|_| OnceLock::new()).collect(),
            next_slot: AtomicUsize::new(0),
            temp_refs: Mutex::new(HashMap::new()),
            spawn_waiters: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            shut_down: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            log_window: Mutex::new((Instant::now(), 0)),
        });
        let task = system
            .runtime_handle()
            .spawn(inbound::run_listener(listener, shared.clone()));
        shared.track(task.abort_handle());
        tracing::info!(address = %shared.address, "remoting started");
        Ok(Remoting { shared })
    }

    /// This node's canonical address.
    pub fn address(&self) -> &Address {
        &self.shared.address
    }

    /// This node's incarnation uid.
    pub fn uid(&self) -> u64 {
        self.shared.uid
    }

    /// A ref to the actor at a full remote path
    /// (`volley://system@host:port/user/a`), whatever its incarnation (like
    /// an actor selection). Nothing is checked until a message is sent.
    pub fn resolve<M: Send + 'static>(&self, path: &str) -> Result<ActorRef<M>, ResolveError> {
        let parsed = ActorPath::parse(path)?;
        address_of(&parsed)?;
        if let Some(local) = self.shared.resolve_local_path(&parsed) {
            if let Some(typed) = local.downcast::<M>() {
                return Ok(typed);
            }
        }
        Ok(RemoteRef::new(parsed, 0, self.shared.system.clone(), self.shared.clone()).typed::<M>())
    }

    /// Spawns an actor of a kind registered as spawnable on the node at
    /// `node`, which must have `remote_spawn` enabled, and returns its ref.
    pub async fn spawn_remote<M, P>(
        &self,
        node: &Address,
        kind: &str,
        name: Option<&str>,
        args: &P,
        timeout: Duration,
    ) -> Result<ActorRef<M>, RemoteSpawnError>
    where
        M: Send + 'static,
        P: Serialize + DeserializeOwned,
    {
        let mut props = bytes::BytesMut::new();
        BincodeSerializer
            .encode(args, &mut props)
            .map_err(|e| RemoteSpawnError::Send(e.to_string()))?;
        let request_id = self.shared.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.spawn_waiters).insert(request_id, tx);
        let request = Pdu::SpawnRequest(SpawnRequest {
            request_id,
            serializer: SerializerId::BINCODE,
            kind,
            name: name.unwrap_or(""),
            props: &props,
        });
        let sent = self
            .shared
            .association(node)
            .and_then(|a| a.control().send_pdu(&request));
        if let Err(e) = sent {
            lock(&self.shared.spawn_waiters).remove(&request_id);
            return Err(RemoteSpawnError::Send(e.to_string()));
        }
        let waited = self
            .shared
            .system
            .runtime_handle()
            .spawn(async move { tokio::time::timeout(timeout, rx).await })
            .await;
        let outcome = match waited {
            Ok(Ok(Ok(outcome))) => outcome,
            Ok(Ok(Err(_))) | Err(_) => Err("remoting shut down".to_string()),
            Ok(Err(_)) => {
                lock(&self.shared.spawn_waiters).remove(&request_id);
                return Err(RemoteSpawnError::Timeout(timeout));
            }
        };
        let (path, uid) = outcome.map_err(RemoteSpawnError::Refused)?;
        let path = ActorPath::parse(&path).map_err(|e| RemoteSpawnError::Refused(e.to_string()))?;
        Ok(RemoteRef::new(path, uid, self.shared.system.clone(), self.shared.clone()).typed::<M>())
    }

    /// Stops listening and closes every connection. Queued messages are
    /// dropped.
    pub fn shutdown(&self) {
        self.shared.shut_down.store(true, Ordering::SeqCst);
        for task in lock(&self.shared.tasks).drain(..) {
            task.abort();
        }
        // A connection parked in its lane is owned by no task: close it here.
        for slot in self.shared.slots.iter() {
            let Some(association) = slot.get() else { break };
            for lane in &association.lanes {
                lane.close();
            }
        }
    }
}

impl Shared {
    fn resolve_local_path(&self, path: &ActorPath) -> Option<AnyRef> {
        (path.authority() == Some(self.authority.as_str()) && path.system() == self.system.name())
            .then(|| self.system.lookup(path.elements()).ok().flatten())
            .flatten()
    }
}

/// A random incarnation uid, from the standard library's randomly seeded
/// hasher (no extra dependency for eight random bytes).
fn random_uid() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish() | 1
}
