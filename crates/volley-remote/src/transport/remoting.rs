//! `Remoting`: the public face of one node's transport.

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use volley::{ActorPath, ActorRef, ActorSystem};

use crate::transport::control::remote_spawn;
use crate::transport::core::RemotingCore;
use crate::transport::errors::{RemoteSpawnError, ResolveError, StartError};
use crate::transport::handshake::tls::TlsContext;
use crate::transport::inbound::accept;
use crate::transport::liveness::authority::{
    AuthorityAlreadySet, MemberVerdicts, MembershipAuthority,
};
use crate::transport::node::address_of;
use crate::transport::refs::tables as ref_tables;
use crate::transport::registry::Registry;
use crate::transport::settings::RemoteSettings;
use crate::wire::Address;

/// Remoting for one actor system: start it with [`Remoting::start`].
#[derive(Clone)]
pub struct Remoting {
    pub(super) core: Arc<RemotingCore>,
}

impl Remoting {
    /// Starts listening with the `[remote]` section of the system's settings.
    pub async fn start(system: &ActorSystem, registry: Registry) -> Result<Remoting, StartError> {
        // Validated as it is read.
        let settings = RemoteSettings::from_system_settings(system.settings())?;
        Self::start_validated(system, registry, settings).await
    }

    /// Starts listening with explicit settings.
    pub async fn start_with(
        system: &ActorSystem,
        registry: Registry,
        settings: RemoteSettings,
    ) -> Result<Remoting, StartError> {
        settings.validate()?;
        Self::start_validated(system, registry, settings).await
    }

    /// Starts listening with settings `validate` accepted (and warned
    /// about, once).
    async fn start_validated(
        system: &ActorSystem,
        registry: Registry,
        settings: RemoteSettings,
    ) -> Result<Remoting, StartError> {
        ref_tables::install_codec()?;
        if system.is_terminated() {
            return Err(StartError::SystemTerminated);
        }
        let bind = format!("{}:{}", settings.bind_host, settings.port);
        let bind_to = bind.clone();
        // The listener belongs to the system's runtime: the caller may be
        // on another.
        let listener = system
            .runtime_handle()
            .spawn(async move { tokio::net::TcpListener::bind(bind_to).await })
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
        // A canonical port of 0 means the bound one, as an absent one
        // does (Pekko's `canonical.port = 0`).
        let port = match settings.canonical_port {
            Some(port) if port != 0 => port,
            _ => bound.port(),
        };
        let address = Address::new(system.name(), host, port)?;
        let tls = TlsContext::from_settings(&settings.tls)?;
        let core = RemotingCore::new(system, settings, registry, address, tls);
        volley::remote::set_local_authority(system, &core.authority);
        let task = system
            .runtime_handle()
            .spawn(accept::run_listener(listener, core.clone()));
        core.track(task);
        let task = system
            .runtime_handle()
            .spawn(crate::transport::core::run_monitor(core.clone()));
        core.track(task);
        // A hook runs in `actor-system-terminate` once the actors have
        // drained and stopped, so what they sent meanwhile and the death
        // notices of their stops are flushed before the goodbye; an earlier
        // phase would cut them off.
        let leaving = core.clone();
        system
            .add_shutdown_hook(
                "volley-remote",
                move || async move { leaving.leave().await },
            )
            .map_err(|_| StartError::SystemTerminated)?;
        tracing::info!(address = %core.address, "remoting started");
        Ok(Remoting { core })
    }

    /// This node's canonical address.
    pub fn address(&self) -> &Address {
        &self.core.address
    }

    /// This node's incarnation uid.
    pub fn uid(&self) -> u64 {
        self.core.uid
    }

    /// When this incarnation started: microseconds since the Unix epoch,
    /// read once when remoting started. Its handshakes tell it, and of two
    /// incarnations of one address the greater `(stamp, uid)` is the newer
    /// (docs/reference/remoting.md#incarnations-and-quarantine).
    pub fn incarnation_stamp(&self) -> u64 {
        self.core.stamp
    }

    /// A ref to the actor at a full remote path
    /// (`volley://system@host:port/user/a`), whatever its incarnation (like
    /// an actor selection). Nothing is checked until a message is sent.
    pub fn resolve<M: Send + 'static>(&self, path: &str) -> Result<ActorRef<M>, ResolveError> {
        let parsed = ActorPath::parse(path)?;
        address_of(&parsed)?;
        if let Some(local) = self.core.resolve_local_path(&parsed) {
            if let Some(typed) = local.downcast::<M>() {
                return Ok(typed);
            }
        }
        Ok(self.core.remote_ref(parsed, 0, None).typed::<M>())
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
        let (path, uid) =
            remote_spawn::spawn_on(&self.core, node, kind, name, args, timeout).await?;
        Ok(self.core.remote_ref(path, uid, None).typed::<M>())
    }

    /// Whether the node at `node` is reachable, as this node's failure
    /// detector judges the heartbeats it receives from it
    /// (`[remote.failure_detector]`): `Some(false)` once it has been silent
    /// for longer than the detector accepts, `Some(true)` before that and
    /// again when its heartbeats resume, `None` if it never connected to
    /// this node, or its association was removed (idle, and referred to
    /// by nothing). A node found unreachable is given up: its incarnation
    /// is quarantined (docs/reference/remoting.md#failure-detection),
    /// unless the membership authority calls it a member.
    pub fn is_reachable(&self, node: &Address) -> Option<bool> {
        self.core.reachability.is_available(node)
    }

    /// The last round trip of this node's heartbeats to `node`: from a
    /// heartbeat to the peer's HeartbeatAck, which the peer sends on its
    /// own connection to this node (so `None` until the peer has one, or
    /// for a peer that does not answer heartbeats). It includes the peer's
    /// queueing on its control lane; only unambiguous round trips, shorter
    /// than the heartbeat interval, are measured (`liveness/rtt.rs`). With metrics
    /// on, each is also recorded in `volley_remote_heartbeat_rtt_seconds`.
    pub fn heartbeat_rtt(&self, node: &Address) -> Option<std::time::Duration> {
        let association = self.core.associations.find(node)?;
        let rtt = crate::transport::support::lock(&association.heartbeat_rtt).latest();
        rtt
    }

    /// The state of this node's association with `node`: `None` if it
    /// has none (it never sent there, nor dialed back a node that dialed
    /// it), or its stopped one was removed once nothing referred to it.
    pub fn association_state(&self, node: &Address) -> Option<AssociationState> {
        let association = self.core.associations.find(node)?;
        Some(if association.is_down() {
            AssociationState::Down
        } else if association.is_retired() {
            AssociationState::Idle
        } else {
            AssociationState::Active
        })
    }

    /// What the refs peers declared on this node's open connections keep
    /// in memory, as the connections estimate it (each within
    /// `limits.max_imported_ref_bytes`); the metric
    /// `volley_remote_imported_ref_bytes`.
    #[doc(hidden)]
    pub fn imported_ref_bytes(&self) -> usize {
        self.core.import_meter.bytes()
    }

    /// Handshakes of `node` refused because their incarnation started
    /// before the one this node talks to, which is alive
    /// (docs/reference/remoting.md#incarnations-and-quarantine); the metric
    /// `volley_remote_superseded_handshakes_total`. `None` without an
    /// association.
    #[doc(hidden)]
    pub fn superseded_handshakes(&self, node: &Address) -> Option<u64> {
        let association = self.core.associations.find(node)?;
        Some(
            association
                .superseded_handshakes
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Declarations refused for `limits.max_imported_refs` or
    /// `limits.max_imported_ref_bytes` so far; the metric
    /// `volley_remote_import_refusals_total`.
    #[doc(hidden)]
    pub fn import_refusals(&self) -> u64 {
        self.core.import_meter.refusals()
    }

    /// How many refs this node's lanes to `node` have declared and still
    /// hold (what a new connection declares again); the metric
    /// `volley_remote_exported_refs`. `None` without an association.
    #[doc(hidden)]
    pub fn exported_refs(&self, node: &Address) -> Option<usize> {
        let association = self.core.associations.find(node)?;
        let held = association
            .lanes()
            .iter()
            .map(|l| l.traffic().exported_refs);
        Some(held.sum::<u64>() as usize)
    }

    /// How many watches actors on `node` hold on this node's actors, as
    /// this node has registered them: a watch counts once its Watch has
    /// arrived here, and no longer once its Unwatch has (or the watched
    /// actor's death notice has left). For tests, which wait on it for a
    /// remote watch to be in place; not a stable API.
    #[doc(hidden)]
    pub fn incoming_watches(&self, node: &Address) -> usize {
        self.core.remote_watches.incoming_count(node)
    }

    /// Switches the membership authority mode on: from now on, a verdict
    /// on an incarnation `authority` calls a member (unreachable, system
    /// messages overdue, control lane overflow, it quarantined this node)
    /// is reported to it instead of quarantining, and the member stays
    /// associated until [`member_removed`](Self::member_removed). Other
    /// nodes are judged as before. Set once, by volley-cluster
    /// (docs/reference/remoting.md#membership-authority).
    pub fn set_membership_authority(
        &self,
        authority: Arc<dyn MembershipAuthority>,
    ) -> Result<(), AuthorityAlreadySet> {
        self.core.membership.set(authority)
    }

    /// The membership authority removed incarnation `uid` of the member at
    /// `node`: every local watch of an actor there gets `Terminated` (once
    /// each), and the incarnation is quarantined, at once if it was Down
    /// (`was_down`), else after `quarantine_removed_node_after`. Nothing
    /// happens for a node this one has no association with.
    pub fn member_removed(&self, node: &Address, uid: u64, was_down: bool) {
        if let Some(association) = self.core.associations.find(node) {
            self.core.member_removed(association, uid, was_down);
        }
    }

    /// Stops at once: stops listening and sending heartbeats, and closes
    /// every connection. Queued messages are dropped and the peers are not
    /// told (they find out from their failure detectors). `ActorSystem::
    /// terminate` leaves gracefully instead: it flushes the queues and tells
    /// the peers. The tasks are aborted, not yet gone, when this returns:
    /// the listening port is free once the system's `terminate` has
    /// returned, which waits for them.
    pub fn shutdown(&self) {
        self.core.shut_down();
    }

    /// Whether [`Remoting::shutdown`] (or `terminate`) has stopped this
    /// remoting: a cluster member then skips the waits of its graceful
    /// leave, which nobody could answer.
    pub fn is_shut_down(&self) -> bool {
        self.core.is_shut_down()
    }
}

/// What an association (this node's outbound side towards one node) is
/// doing; see [`Remoting::association_state`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AssociationState {
    /// Its writer and heartbeat tasks run; its connections are open or
    /// being (re)established.
    Active,
    /// Stopped for idleness (`stop_idle_outbound_after`): no
    /// connection, no task; the next message either way starts it again.
    Idle,
    /// The node's last incarnation is gone (unreachable, quarantined or
    /// shut down) and no new one has shaken hands: sends fail at once.
    Down,
}
