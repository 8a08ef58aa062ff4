//! The entry point (Akka Typed's `ClusterSharding`): starts an entity
//! type's region and coordinator on a system, and finds them again by
//! the type's key. Each system keeps its entity types in an extension.

use std::any::{type_name, Any};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, PoisonError};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::oneshot;
use volley::{Actor, ActorRef, ActorSystem};
use volley_remote::transport::RegistryError;
use volley_remote::{Registry, Remoting};

use super::cluster_stats::{self, ClusterShardingStats};
use super::coordinator::ShardCoordinator;
use super::entity::Entity;
use super::entity_name::entity_name;
use super::entity_ref::{EntityRef, EntityTypeKey};
use super::extractor::{checked_shard_of, ShardExtractor, ShardOfError};
use super::protocol::{CoordinatorMsg, RegionControl};
use super::region::{RegionExtras, RegionMsg, ShardRegion};
use super::region_counters::RegionCounters;
use super::region_outbox::{bincode_size, SizeOf};
use super::region_state::CurrentShardRegionState;
use super::remembering::Remembering;
use super::settings::ShardingError;
use crate::runtime::Cluster;
use crate::singleton::{ClusterSingleton, SingletonError, SingletonSettings};

/// Registers the regions' and coordinators' protocol for remoting, under
/// `first_id` and `first_id + 1`: every node must do so with the same
/// ids, and register each entity type's `ShardEnvelope<M>` too, besides
/// the singleton's types
/// ([`register_singleton_types`](crate::singleton::register_singleton_types)),
/// since the coordinator runs as a singleton.
pub fn register_sharding_types(
    registry: &mut Registry,
    first_id: u32,
) -> Result<(), RegistryError> {
    registry.register::<CoordinatorMsg>(first_id)?;
    registry.register::<RegionControl>(first_id.saturating_add(1))
}

/// Where an entity type's coordinator runs.
enum CoordinatorHome<'a, M> {
    /// In this process, for this node alone.
    Local,
    /// As a cluster singleton, for the regions of every node, which
    /// measure messages for batches to each other with `size_of`; this
    /// node's region is a `proxy` or may host shards.
    Singleton {
        remoting: &'a Remoting,
        size_of: SizeOf<M>,
        proxy: bool,
    },
}

/// The longest entity type name: its actors' names add to it.
const MAX_TYPE_NAME: usize = 200;

/// Starts sharded entity types and finds them.
pub struct ClusterSharding;

/// A started entity type on this system: hands out [`EntityRef`]s.
pub struct Sharding<M: Send + 'static> {
    name: Arc<str>,
    region: ActorRef<RegionMsg<M>>,
    coordinator: ActorRef<CoordinatorMsg>,
    extractor: Arc<dyn ShardExtractor>,
    number_of_shards: u32,
    counters: Arc<RegionCounters>,
}

impl<M: Send + 'static> Clone for Sharding<M> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            region: self.region.clone(),
            coordinator: self.coordinator.clone(),
            extractor: self.extractor.clone(),
            number_of_shards: self.number_of_shards,
            counters: self.counters.clone(),
        }
    }
}

impl<M: Send + 'static> Sharding<M> {
    /// The entity of id `entity_id`. An empty id, an extractor that
    /// panics on it and a shard out of range are errors, not crashes.
    pub fn entity_ref(&self, entity_id: &str) -> Result<EntityRef<M>, ShardingError> {
        let shard = checked_shard_of(&*self.extractor, self.number_of_shards, entity_id)?;
        Ok(EntityRef::new(self.region.clone(), shard, entity_id.into()))
    }

    /// The entity type's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This node's region of the entity type.
    pub fn region(&self) -> &ActorRef<RegionMsg<M>> {
        &self.region
    }

    /// The entity type's coordinator.
    pub fn coordinator(&self) -> &ActorRef<CoordinatorMsg> {
        &self.coordinator
    }

    /// Messages the region's full buffer refused (each a dead letter too).
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Relaxed)
    }

    /// Hand-offs of this node's region that went ahead without every
    /// other region's marker, after `handoff_timeout` (design §4).
    pub fn handoff_marker_timeouts(&self) -> u64 {
        self.counters.marker_timeouts.load(Relaxed)
    }

    /// Operations of the remembered-entities store that failed on this
    /// node for the entity type (each also published on the event stream
    /// as a [`RememberStoreFailed`](super::RememberStoreFailed)).
    pub fn store_failures(&self) -> u64 {
        self.counters.store_failures.load(Relaxed)
    }

    /// What this node's region hosts: its shards and their entities
    /// (Pekko's `GetShardRegionState`). A shard that does not answer within
    /// `shard_region_query_timeout` is listed in `failed`.
    /// `Err(RegionStopped)` once the region has stopped.
    pub async fn shard_region_state(&self) -> Result<CurrentShardRegionState, ShardingError> {
        let (reply, state) = oneshot::channel();
        self.region.tell(RegionMsg::GetState(reply));
        state.await.map_err(|_| ShardingError::RegionStopped)
    }

    /// How many entities every region of the entity type hosts, per shard
    /// (Pekko's `GetClusterShardingStats`), asked of the coordinator and
    /// then of each region, all within `timeout`: a region that does not
    /// answer in time is left out. `Err(QueryTimedOut)` if the
    /// coordinator does not answer in time.
    pub async fn cluster_sharding_stats(
        &self,
        timeout: std::time::Duration,
    ) -> Result<ClusterShardingStats, ShardingError> {
        cluster_stats::query(&self.coordinator, timeout).await
    }

    /// Entities' messages this node's region sent other regions in
    /// batches of more than one (reference/sharding.md, "On a cluster").
    pub fn batched_messages(&self) -> u64 {
        self.counters.batched.load(Relaxed)
    }
}

/// The entity types of one system, by name, each with its message type.
#[derive(Clone, Default)]
struct EntityTypes(Arc<Mutex<HashMap<String, Registered>>>);

struct Registered {
    message_type: &'static str,
    sharding: Box<dyn Any + Send + Sync>,
}

fn entity_types(system: &ActorSystem) -> EntityTypes {
    let _kept = system.register_extension(EntityTypes::default());
    system
        .extension::<EntityTypes>()
        .expect("registered just now")
}

impl ClusterSharding {
    /// Starts entity type `entity` on `system`: its region, and (for now
    /// in this process) its coordinator. An entity type starts once per
    /// system; its name must be 1 to 200 characters.
    pub fn init<A: Actor>(
        system: &ActorSystem,
        entity: Entity<A>,
    ) -> Result<Sharding<A::Msg>, ShardingError> {
        Self::init_at(system, entity, CoordinatorHome::Local)
    }

    /// Starts entity type `entity` on `system`, a member of a cluster: do
    /// so on every node that hosts its entities. Its coordinator runs as
    /// a cluster singleton (on the oldest member), and regions reach each
    /// other's shards through `remoting`. The protocol's types and the
    /// entity type's `ShardEnvelope<M>` must be registered for remoting
    /// ([`register_sharding_types`]).
    ///
    /// The message type is serde's: a region measures each message's
    /// encoding to batch what it sends another region (`remote_batch_*`
    /// in [`ShardingSettings`]).
    pub fn init_on_cluster<A: Actor>(
        system: &ActorSystem,
        remoting: &Remoting,
        entity: Entity<A>,
    ) -> Result<Sharding<A::Msg>, ShardingError>
    where
        A::Msg: Serialize + DeserializeOwned,
    {
        let cluster = Cluster::get(system).ok_or(ShardingError::NoCluster)?;
        let role = entity.settings.role.as_deref();
        let proxy = role.is_some_and(|role| !cluster.self_roles().iter().any(|r| r == role));
        Self::init_on_cluster_as(system, remoting, entity, proxy)
    }

    /// Starts entity type `entity` on `system` as a proxy (Pekko's
    /// `startProxy`): its region routes messages to the shards the other
    /// members host, and hosts none itself, whatever this node's roles.
    /// [`init_on_cluster`](Self::init_on_cluster) starts a proxy by
    /// itself on a member without the entity type's `role`. The entity
    /// factory is not used.
    pub fn init_proxy_on_cluster<A: Actor>(
        system: &ActorSystem,
        remoting: &Remoting,
        entity: Entity<A>,
    ) -> Result<Sharding<A::Msg>, ShardingError>
    where
        A::Msg: Serialize + DeserializeOwned,
    {
        Self::init_on_cluster_as(system, remoting, entity, true)
    }

    fn init_on_cluster_as<A: Actor>(
        system: &ActorSystem,
        remoting: &Remoting,
        entity: Entity<A>,
        proxy: bool,
    ) -> Result<Sharding<A::Msg>, ShardingError>
    where
        A::Msg: Serialize + DeserializeOwned,
    {
        let size_of: SizeOf<A::Msg> = bincode_size::<A::Msg>;
        let home = CoordinatorHome::Singleton {
            remoting,
            size_of,
            proxy,
        };
        Self::init_at(system, entity, home)
    }

    fn init_at<A: Actor>(
        system: &ActorSystem,
        entity: Entity<A>,
        home: CoordinatorHome<'_, A::Msg>,
    ) -> Result<Sharding<A::Msg>, ShardingError> {
        let name = entity.key.name().to_owned();
        let encoded = match entity_name(&name) {
            Some(encoded) if !name.is_empty() && name.len() <= MAX_TYPE_NAME => encoded,
            _ => return Err(ShardingError::InvalidTypeName(name)),
        };
        if entity.number_of_shards == 0 {
            return Err(ShardOfError::NoShards.into());
        }
        entity.settings.validate()?;
        let types = entity_types(system);
        let mut types = types.0.lock().unwrap_or_else(PoisonError::into_inner);
        if types.contains_key(&name) {
            return Err(ShardingError::AlreadyInitialised(name));
        }
        let sharding = start(system, &encoded, entity, home)?;
        let registered = Registered {
            message_type: type_name::<A::Msg>(),
            sharding: Box::new(sharding.clone()),
        };
        types.insert(name, registered);
        Ok(sharding)
    }

    /// The entity type of `key` started on `system`.
    pub fn get<M: Send + 'static>(
        system: &ActorSystem,
        key: &EntityTypeKey<M>,
    ) -> Result<Sharding<M>, ShardingError> {
        let types = entity_types(system);
        let types = types.0.lock().unwrap_or_else(PoisonError::into_inner);
        let name = key.name();
        let registered = types
            .get(name)
            .ok_or_else(|| ShardingError::UnknownEntityType(name.to_owned()))?;
        let sharding = registered.sharding.downcast_ref::<Sharding<M>>().ok_or(
            ShardingError::MessageTypeMismatch {
                name: name.to_owned(),
                actual: registered.message_type,
                asked: type_name::<M>(),
            },
        )?;
        Ok(sharding.clone())
    }

    /// The entity `entity_id` of the type of `key` started on `system`.
    pub fn entity_ref<M: Send + 'static>(
        system: &ActorSystem,
        key: &EntityTypeKey<M>,
        entity_id: &str,
    ) -> Result<EntityRef<M>, ShardingError> {
        Self::get(system, key)?.entity_ref(entity_id)
    }
}

/// Spawns the coordinator (or its singleton) and the region of `entity`.
fn start<A: Actor>(
    system: &ActorSystem,
    encoded: &str,
    entity: Entity<A>,
    home: CoordinatorHome<'_, A::Msg>,
) -> Result<Sharding<A::Msg>, ShardingError> {
    let settings = entity.settings;
    let name = format!("sharding-{encoded}-coordinator");
    let region_name = format!("sharding-{encoded}");
    let counters = Arc::new(RegionCounters::default());
    let remember = remembering(system, entity.key.name(), &settings, &counters)?;
    let (size_of, proxy) = match &home {
        CoordinatorHome::Local => (None, false),
        CoordinatorHome::Singleton { size_of, proxy, .. } => (Some(*size_of), *proxy),
    };
    let (coordinator, remoting) = match home {
        CoordinatorHome::Local => {
            let props = ShardCoordinator::props_remembering(settings.clone(), remember.clone());
            (system.spawn(&name, props).map_err(spawn_error)?, None)
        }
        CoordinatorHome::Singleton { remoting, .. } => {
            let props = ShardCoordinator::props_on_cluster_remembering(
                settings.clone(),
                remoting.clone(),
                region_name.clone(),
                remember.clone(),
            );
            let mut singleton = SingletonSettings::new(&name);
            singleton.retry_interval = settings.retry_interval;
            singleton.down_removal_margin = settings.down_removal_margin;
            singleton.role = settings.role.clone();
            let started =
                ClusterSingleton::start(system, remoting, singleton, props).map_err(|error| {
                    match error {
                        SingletonError::NoCluster => ShardingError::NoCluster,
                        other => ShardingError::Spawn(other.to_string()),
                    }
                })?;
            let remoting = Some(remoting.clone());
            (started.proxy().clone(), remoting)
        }
    };
    let extras = RegionExtras {
        remember,
        size_of,
        proxy,
    };
    let on_cluster = remoting.clone();
    let region_props = ShardRegion::props_remembering(
        entity.factory,
        settings,
        coordinator.clone(),
        counters.clone(),
        remoting,
        extras,
    );
    let region = system
        .spawn(&region_name, region_props)
        .map_err(spawn_error)?;
    if let Some(remoting) = on_cluster {
        add_shutdown_task(system, &region_name, region.clone(), remoting)?;
    }
    Ok(Sharding {
        name: entity.key.name().into(),
        region,
        coordinator,
        extractor: entity.extractor,
        number_of_shards: entity.number_of_shards,
        counters,
    })
}

/// In coordinated shutdown, before the node leaves the cluster
/// (`cluster-sharding-shutdown-region`, Pekko's phase), the region hands
/// its shards off and stops; the phase waits for that, at most its
/// timeout. A node whose remoting is shut down already (it is cut off,
/// as a crashed one) has nobody to hand off to: it does not wait (as a
/// Pekko region does not once its cluster is terminated).
fn add_shutdown_task<M: Send + 'static>(
    system: &ActorSystem,
    region_name: &str,
    region: ActorRef<RegionMsg<M>>,
    remoting: Remoting,
) -> Result<(), ShardingError> {
    let task = format!("sharding-hand-off-{region_name}");
    system
        .coordinated_shutdown()
        .add_task(
            "cluster-sharding-shutdown-region",
            &task,
            move || async move {
                if remoting.is_shut_down() {
                    return;
                }
                let (waiter, stopped) = oneshot::channel();
                region.tell(RegionMsg::GracefulShutdown(waiter));
                // A region that stopped, or needs no hand-off, drops it.
                let _ = stopped.await;
            },
        )
        .map_err(|error| ShardingError::Spawn(error.to_string()))
}

/// The entity type's store, opened, when it remembers its entities;
/// nothing is opened (or created) when it does not.
fn remembering(
    system: &ActorSystem,
    entity_type: &str,
    settings: &super::ShardingSettings,
    counters: &Arc<RegionCounters>,
) -> Result<Option<Remembering>, ShardingError> {
    if !settings.remember_entities {
        return Ok(None);
    }
    let location = settings
        .remember_store
        .as_ref()
        .ok_or(ShardingError::NoRememberStore)?;
    let store = location
        .open(system)
        .map_err(|error| ShardingError::Store(error.into()))?;
    Ok(Some(Remembering {
        store,
        entity_type: entity_type.into(),
        counters: counters.clone(),
    }))
}

fn spawn_error(error: volley::SpawnError) -> ShardingError {
    ShardingError::Spawn(error.to_string())
}
