//! How a sharded entity type behaves, and what can go wrong in using it.

use std::time::Duration;

use super::allocation::LeastShardAllocation;
use super::extractor::ShardOfError;
use super::shard::ShardSettings;
use super::store::{SharedStoreError, StoreLocation};

/// The settings of one entity type's region and coordinator (Pekko's
/// `pekko.cluster.sharding` section, with its defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct ShardingSettings {
    /// Most messages a region keeps, in all, for shards whose home it does
    /// not know yet (Pekko's `buffer-size`); past it, a message is a
    /// counted dead letter.
    pub buffer_size: usize,
    /// How often a region asks again for what is unanswered: its
    /// registration, and the homes of shards it buffers for.
    pub retry_interval: Duration,
    /// How often the coordinator runs a rebalance round.
    pub rebalance_interval: Duration,
    /// How long a hand-off may wait for the regions' acknowledgements
    /// before the shard stays where it is.
    pub handoff_timeout: Duration,
    /// How long after a region's member is removed its shards stay where
    /// they were, for a member that did not hand them off (Pekko's
    /// `down-removal-margin`): the removed side needs that long to see
    /// itself downed and stop its region. Also the coordinator
    /// singleton's margin.
    pub down_removal_margin: Duration,
    /// How long a new coordinator (the singleton moved) waits for the
    /// regions of the members to register and report their shards before
    /// it allocates anything.
    pub coordinator_state_wait: Duration,
    /// How long the coordinator waits for a region to say it started a
    /// shard it was told to host before it tells it again (Pekko's
    /// `shard-start-timeout`).
    pub shard_start_timeout: Duration,
    /// Where shards go and which move.
    pub allocation: LeastShardAllocation,
    /// The shards' passivation and buffer.
    pub shard: ShardSettings,
    /// Remember the entities that run, and the shards allocated, in
    /// `remember_store`, and start them again without a message when
    /// their shard starts: on a hand-off, after a crash of the shard, and
    /// after a restart of the whole cluster (Pekko's
    /// `remember-entities`). Off, nothing is read or written. On, the
    /// shard's automatic passivation (`shard.passivation`) is off too, as
    /// in Pekko: an entity stops for good only by asking
    /// ([`passivate`](super::passivate)).
    pub remember_entities: bool,
    /// Where this node keeps them; required when `remember_entities` is
    /// on (`ShardingError::NoRememberStore`), unused when it is off.
    pub remember_store: Option<StoreLocation>,
    /// How long a shard that stopped for a failure of its store waits
    /// before its region starts it again, with its remembered entities
    /// (Pekko's `shard-failure-backoff`). A message for it starts it at
    /// once.
    pub shard_failure_backoff: Duration,
    /// Most entity messages a region sends another region as one remote
    /// message (a batch of what it handled in a row). 1: each goes
    /// alone.
    pub remote_batch_messages: usize,
    /// Most bytes of a batch, by the messages' bincode encoding; a
    /// message over it goes alone. Keep it well below the remote
    /// transport's `large_message_threshold` (64 KiB by default): a batch
    /// over that threshold would take the large lane, and messages on two
    /// lanes keep no order.
    pub remote_batch_bytes: usize,
    /// The role of the members that host this entity type's shards
    /// (Pekko's `role`): on a member without it the region is a proxy,
    /// which routes messages but hosts no shard, and the coordinator runs
    /// on the oldest member with it. `None`: every member hosts.
    pub role: Option<String>,
    /// How long `Sharding::shard_region_state` waits for the region's
    /// shards to answer; one that does not is listed as failed (Pekko's
    /// `shard-region-query-timeout`).
    pub shard_region_query_timeout: Duration,
}

impl Default for ShardingSettings {
    fn default() -> Self {
        Self {
            buffer_size: 100_000,
            retry_interval: Duration::from_secs(2),
            rebalance_interval: Duration::from_secs(10),
            handoff_timeout: Duration::from_secs(60),
            down_removal_margin: Duration::from_secs(7),
            coordinator_state_wait: Duration::from_secs(5),
            shard_start_timeout: Duration::from_secs(10),
            allocation: LeastShardAllocation::default(),
            shard: ShardSettings::default(),
            remember_entities: false,
            remember_store: None,
            shard_failure_backoff: Duration::from_secs(10),
            remote_batch_messages: 64,
            remote_batch_bytes: 4 * 1024,
            role: None,
            shard_region_query_timeout: Duration::from_secs(3),
        }
    }
}

impl ShardingSettings {
    /// Checks the values: a refused one is named by its field. Starting
    /// an entity type checks its settings with this.
    pub fn validate(&self) -> Result<(), ShardingError> {
        let out_of_range = |key, reason| Err(ShardingError::OutOfRange { key, reason });
        let periods = [
            ("retry_interval", self.retry_interval),
            ("rebalance_interval", self.rebalance_interval),
            ("handoff_timeout", self.handoff_timeout),
            ("shard_start_timeout", self.shard_start_timeout),
            (
                "shard_region_query_timeout",
                self.shard_region_query_timeout,
            ),
            (
                "shard.passivation_check_interval",
                self.shard.passivation_check_interval,
            ),
        ];
        if let Some((key, _)) = periods.iter().find(|(_, d)| d.is_zero()) {
            return out_of_range(key, "must be above zero");
        }
        if self.remote_batch_messages == 0 {
            return out_of_range("remote_batch_messages", "must be at least 1");
        }
        if self.role.as_deref().is_some_and(str::is_empty) {
            return out_of_range("role", "must not be empty (leave it out for every member)");
        }
        let passivation = &self.shard.passivation;
        if passivation.idle_timeout.is_some_and(|d| d.is_zero()) {
            return out_of_range("shard.passivation.idle_timeout", "must be above zero");
        }
        if passivation.max_active == Some(0) {
            return out_of_range("shard.passivation.max_active", "must be at least 1");
        }
        Ok(())
    }
}

/// Why sharding refused a request. None of these stops the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardingError {
    /// No entity type of this name was initialised on this system.
    #[error("no sharded entity type {0:?} was initialised on this system")]
    UnknownEntityType(String),
    /// The entity type exists, but takes another message type.
    #[error("the sharded entity type {name:?} takes {actual}, not {asked}")]
    MessageTypeMismatch {
        /// The entity type.
        name: String,
        /// The message type it takes.
        actual: &'static str,
        /// The message type asked for.
        asked: &'static str,
    },
    /// An entity type of this name was initialised already.
    #[error("the sharded entity type {0:?} was initialised already")]
    AlreadyInitialised(String),
    /// The entity type's name cannot name its actors.
    #[error("an entity type name must be 1 to 200 characters: {0:?}")]
    InvalidTypeName(String),
    /// The entity id maps to no shard.
    #[error(transparent)]
    ShardOf(#[from] ShardOfError),
    /// `init_on_cluster` on a system that runs no `Cluster`.
    #[error("the actor system runs no cluster: start one before sharding on it")]
    NoCluster,
    /// `remember_entities` is on but `remember_store` names no store.
    #[error("remember_entities is on but remember_store is None")]
    NoRememberStore,
    /// The remembered-entities store could not be opened.
    #[error("the remembered-entities store cannot be opened: {0}")]
    Store(SharedStoreError),
    /// The region or coordinator could not be started.
    #[error("sharding could not start its actors: {0}")]
    Spawn(String),
    /// A stats query's coordinator did not answer in time.
    #[error("the sharding coordinator did not answer the query in time")]
    QueryTimedOut,
    /// The region has stopped (its node left, or the system terminated).
    #[error("the sharding region has stopped")]
    RegionStopped,
    /// A setting is out of its range.
    #[error("sharding setting {key} {reason}")]
    OutOfRange {
        /// The field, as `ShardingSettings` names it (dotted below
        /// `shard`).
        key: &'static str,
        /// What it must be.
        reason: &'static str,
    },
}
