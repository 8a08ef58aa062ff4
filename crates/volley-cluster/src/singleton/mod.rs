//! The cluster singleton (Akka's `ClusterSingletonManager` and
//! `ClusterSingletonProxy`): one instance of an actor in the cluster, on
//! the oldest Up member (with a role, if one is set), handed over when
//! that member leaves and moved when the split-brain resolver downs it.
//!
//! - `oldest`: each node's view of the members, by age;
//! - `duty`: what a node's manager must do, decided from that view;
//! - `manager`: the per-node manager and the hand-over protocol;
//! - `messages`: the protocol as it crosses nodes;
//! - `proxy`, `buffer`: the per-node proxy and its bounded buffer;
//! - `settings`: [`SingletonSettings`], [`SingletonError`]; `section`:
//!   their `[cluster.singleton]` section, [`SingletonSection`].

mod agreement;
mod buffer;
mod duty;
mod manager;
mod messages;
mod oldest;
mod proxy;
mod section;
mod settings;
#[cfg(test)]
pub(crate) mod sim_model;
#[cfg(test)]
mod sim_tests;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use tokio::sync::oneshot;
use volley::{Actor, ActorRef, ActorSystem, Props};
use volley_remote::transport::RegistryError;
use volley_remote::{Registry, Remoting};

pub use self::messages::{ManagerMsg, MemberId, ProxyControl};
pub use self::section::SingletonSection;
pub use self::settings::{SingletonError, SingletonSettings};

use self::manager::Manager;
use self::proxy::{Proxy, ProxyMsg};
use crate::runtime::Cluster;

/// Registers the singleton's protocol for remoting, under `first_id` and
/// `first_id + 1`: every node of the cluster must do so with the same
/// ids, besides registering the singleton's own message type.
pub fn register_singleton_types(
    registry: &mut Registry,
    first_id: u32,
) -> Result<(), RegistryError> {
    registry.register::<ManagerMsg>(first_id)?;
    registry.register::<ProxyControl>(first_id.saturating_add(1))
}

/// A node's handle on a cluster singleton: its proxy, which every node may
/// tell, and the proxy's count of messages dropped from its full buffer.
#[derive(Clone)]
pub struct ClusterSingleton<M: Send + 'static> {
    proxy: ActorRef<M>,
    dropped: Arc<AtomicU64>,
}

impl<M: Send + 'static> ClusterSingleton<M> {
    /// Starts the singleton's manager and proxy on this node (do so on
    /// every node that may host it): `props` makes the instance whenever
    /// this node becomes the one to run it. The system must run a
    /// [`Cluster`]. A manager on a node without the role stays idle.
    pub fn start<A>(
        system: &ActorSystem,
        remoting: &Remoting,
        settings: SingletonSettings,
        props: Props<A>,
    ) -> Result<Self, SingletonError>
    where
        A: Actor<Msg = M>,
    {
        settings.validate()?;
        let cluster = Cluster::get(system).ok_or(SingletonError::NoCluster)?;
        let manager = system.spawn(
            &settings.name,
            Manager::props(settings.clone(), props, cluster, remoting.clone()),
        )?;
        add_shutdown_task(system, &settings.name, manager, remoting.clone())?;
        Self::proxy_only(system, remoting, settings)
    }

    /// Starts only the proxy on this node (a node that never hosts the
    /// singleton but sends to it).
    pub fn proxy_only(
        system: &ActorSystem,
        remoting: &Remoting,
        settings: SingletonSettings,
    ) -> Result<Self, SingletonError> {
        settings.validate()?;
        let cluster = Cluster::get(system).ok_or(SingletonError::NoCluster)?;
        let dropped = Arc::new(AtomicU64::new(0));
        let name = format!("{}-proxy", settings.name);
        let proxy = system.spawn(
            &name,
            Proxy::<M>::props(settings, cluster, remoting.clone(), dropped.clone()),
        )?;
        Ok(Self {
            proxy: proxy.adapt(ProxyMsg::User),
            dropped,
        })
    }

    /// The proxy: tell it what the singleton should get, from anywhere on
    /// this node.
    pub fn proxy(&self) -> &ActorRef<M> {
        &self.proxy
    }

    /// Messages the proxy dropped (the oldest first) because its buffer
    /// was full while the singleton moved; each is a dead letter too.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

/// In coordinated shutdown's `cluster-exiting` phase (Pekko's
/// `wait-singleton-exiting`), the manager finishes its hand-over: the
/// node is Exiting by then (after `cluster-leave`), its instance stops
/// and drains, and the next oldest gets `HandOverDone`. The node confirms
/// its exit only in the next phase, so the leader does not remove it (nor
/// the transport quarantine it) while its instance still runs; and the
/// sharding regions handed off their shards in the phase before
/// `cluster-leave`, while the coordinator (a singleton) was still here.
///
/// A node whose remoting is shut down already is cut off, as a crashed
/// one: the others start a new instance only once they downed and
/// removed it, so the task does not wait for a hand-over nobody can
/// answer; the instance stops with the actors.
fn add_shutdown_task(
    system: &ActorSystem,
    name: &str,
    manager: ActorRef<ManagerMsg>,
    remoting: Remoting,
) -> Result<(), SingletonError> {
    let task = format!("singleton-hand-over-{name}");
    system
        .coordinated_shutdown()
        .add_task("cluster-exiting", &task, move || async move {
            if remoting.is_shut_down() {
                return;
            }
            let (done, stopped) = oneshot::channel();
            manager.tell(ManagerMsg::Shutdown(done));
            // A manager that stopped drops the sender: nothing to wait for.
            let _ = stopped.await;
        })
        .map_err(|_| SingletonError::SystemTerminated)
}
