//! The `[cluster.sharding]` section: the defaults of every entity type a
//! node starts (Pekko's `pekko.cluster.sharding` keys, with underscores
//! and durations with units). The entity type itself, its factory and a
//! remembered-entities store are given in code; what is read here are the
//! numbers an operator tunes without a rebuild.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::allocation::{AllocationSettingsError, LeastShardAllocation};
use super::passivation::PassivationSettings;
use super::settings::{ShardingError, ShardingSettings};
use crate::runtime::{ClusterError, ClusterSettings};
use crate::sbr::{SbrSettings, StableAfter};

/// `[cluster.sharding]`, as written in the settings. Every key is
/// optional; an absent one keeps [`ShardingSettings::default`]'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShardingSection {
    /// Only members with this role host shards (Pekko's `role`).
    pub role: Option<String>,
    /// Messages a region keeps for shards whose home it does not know yet
    /// (`buffer-size`).
    pub buffer_size: usize,
    /// How often a region asks again for what is unanswered
    /// (`retry-interval`).
    #[serde(with = "humantime_serde")]
    pub retry_interval: Duration,
    /// How often the coordinator runs a rebalance round
    /// (`rebalance-interval`).
    #[serde(with = "humantime_serde")]
    pub rebalance_interval: Duration,
    /// How long a hand-off waits for the regions (`handoff-timeout`).
    #[serde(with = "humantime_serde")]
    pub handoff_timeout: Duration,
    /// How long a removed member's shards stay where they were
    /// (`down-removal-margin`). Absent: the resolver's `stable_after` when
    /// it is fixed, as Pekko derives it; otherwise the default.
    #[serde(with = "humantime_serde")]
    pub down_removal_margin: Option<Duration>,
    /// How long a new coordinator waits for the regions to report
    /// (Pekko's `waiting-for-state-timeout`).
    #[serde(with = "humantime_serde")]
    pub coordinator_state_wait: Duration,
    /// How long the coordinator waits for a region to start a shard
    /// (`shard-start-timeout`).
    #[serde(with = "humantime_serde")]
    pub shard_start_timeout: Duration,
    /// How long a shard whose store failed waits before it starts again
    /// (`shard-failure-backoff`).
    #[serde(with = "humantime_serde")]
    pub shard_failure_backoff: Duration,
    /// How long after an entity stopped without passivating it starts
    /// again, with remembered entities (`entity-restart-backoff`).
    #[serde(with = "humantime_serde")]
    pub entity_restart_backoff: Duration,
    /// Remember the entities that run (`remember-entities`); the store is
    /// given in code (`ShardingSettings::remember_store`).
    pub remember_entities: bool,
    /// Passivate an entity idle this long (Pekko's
    /// `passivation.default-idle-strategy.idle-entity.timeout`). Absent:
    /// no idle passivation.
    #[serde(with = "humantime_serde")]
    pub passivation_idle_timeout: Option<Duration>,
    /// Most active entities per region, past which the least recently
    /// used are passivated (Pekko's `active-entity-limit`). Absent: none.
    pub passivation_active_entity_limit: Option<usize>,
    /// How often a shard looks for entities to passivate.
    #[serde(with = "humantime_serde")]
    pub passivation_check_interval: Duration,
    /// Messages a shard keeps for entities that are stopping.
    pub shard_buffer_limit: usize,
    /// Most shards a rebalance round moves (Pekko's
    /// `least-shard-allocation-strategy.rebalance-absolute-limit`).
    pub rebalance_absolute_limit: usize,
    /// Most shards a rebalance round moves, as a share of all shards
    /// (`rebalance-relative-limit`), in (0, 1].
    pub rebalance_relative_limit: f64,
    /// Most entity messages a region sends another region in one batch.
    pub remote_batch_messages: usize,
    /// Most bytes of such a batch.
    pub remote_batch_bytes: usize,
    /// How long a region's state query waits for its shards
    /// (`shard-region-query-timeout`).
    #[serde(with = "humantime_serde")]
    pub shard_region_query_timeout: Duration,
}

impl Default for ShardingSection {
    fn default() -> Self {
        let defaults = ShardingSettings::default();
        let shard = defaults.shard;
        ShardingSection {
            role: defaults.role,
            buffer_size: defaults.buffer_size,
            retry_interval: defaults.retry_interval,
            rebalance_interval: defaults.rebalance_interval,
            handoff_timeout: defaults.handoff_timeout,
            down_removal_margin: None,
            coordinator_state_wait: defaults.coordinator_state_wait,
            shard_start_timeout: defaults.shard_start_timeout,
            shard_failure_backoff: defaults.shard_failure_backoff,
            entity_restart_backoff: shard.entity_restart_backoff,
            remember_entities: defaults.remember_entities,
            passivation_idle_timeout: shard.passivation.idle_timeout,
            passivation_active_entity_limit: shard.passivation.max_active,
            passivation_check_interval: shard.passivation_check_interval,
            shard_buffer_limit: shard.buffer_limit,
            rebalance_absolute_limit: defaults.allocation.absolute_limit(),
            rebalance_relative_limit: defaults.allocation.relative_limit(),
            remote_batch_messages: defaults.remote_batch_messages,
            remote_batch_bytes: defaults.remote_batch_bytes,
            shard_region_query_timeout: defaults.shard_region_query_timeout,
        }
    }
}

impl ShardingSection {
    /// The settings the section describes, with `resolver` the cluster's
    /// split-brain resolver (`None`: off), unchecked.
    pub fn settings(
        &self,
        resolver: Option<&SbrSettings>,
    ) -> Result<ShardingSettings, ShardingError> {
        let derived = resolver.and_then(|r| match r.stable_after {
            StableAfter::Fixed(after) => Some(after),
            StableAfter::BySize => None,
        });
        let defaults = ShardingSettings::default();
        let allocation =
            LeastShardAllocation::new(self.rebalance_absolute_limit, self.rebalance_relative_limit)
                .map_err(allocation_error)?;
        Ok(ShardingSettings {
            role: self.role.clone(),
            buffer_size: self.buffer_size,
            retry_interval: self.retry_interval,
            rebalance_interval: self.rebalance_interval,
            handoff_timeout: self.handoff_timeout,
            down_removal_margin: self
                .down_removal_margin
                .or(derived)
                .unwrap_or(defaults.down_removal_margin),
            coordinator_state_wait: self.coordinator_state_wait,
            shard_start_timeout: self.shard_start_timeout,
            shard_failure_backoff: self.shard_failure_backoff,
            remember_entities: self.remember_entities,
            allocation,
            shard: super::ShardSettings {
                passivation: PassivationSettings {
                    idle_timeout: self.passivation_idle_timeout,
                    max_active: self.passivation_active_entity_limit,
                },
                passivation_check_interval: self.passivation_check_interval,
                buffer_limit: self.shard_buffer_limit,
                entity_restart_backoff: self.entity_restart_backoff,
            },
            remote_batch_messages: self.remote_batch_messages,
            remote_batch_bytes: self.remote_batch_bytes,
            shard_region_query_timeout: self.shard_region_query_timeout,
            ..defaults
        })
    }

    /// Checks the section's values, named by their key in `[cluster]`.
    pub(crate) fn validate(&self) -> Result<(), ClusterError> {
        self.settings(None)
            .and_then(|settings| settings.validate())
            .map_err(cluster_error)
    }
}

impl ShardingSettings {
    /// The settings from the `[cluster.sharding]` section of the system's
    /// settings (defaults when absent), checked. Without a
    /// `down_removal_margin` there, the resolver's fixed `stable_after` is
    /// taken (`[cluster.split_brain_resolver]`). Set `remember_store` and
    /// anything else given in code on the result.
    pub fn from_system_settings(settings: &volley::Settings) -> Result<Self, ClusterError> {
        let cluster = ClusterSettings::from_system_settings(settings)?;
        let resolver = cluster.split_brain_resolver.settings()?;
        let settings = cluster.sharding.settings(resolver.as_ref());
        settings
            .and_then(|settings| settings.validate().map(|()| settings))
            .map_err(cluster_error)
    }
}

/// The section's rebalance limits, refused, as a range error of their key.
fn allocation_error(error: AllocationSettingsError) -> ShardingError {
    let (key, reason) = match error {
        AllocationSettingsError::ZeroAbsoluteLimit => {
            ("rebalance_absolute_limit", "must be at least 1")
        }
        AllocationSettingsError::RelativeLimitOutOfRange(_) => {
            ("rebalance_relative_limit", "must be in (0, 1]")
        }
    };
    ShardingError::OutOfRange { key, reason }
}

/// A refused sharding setting as an error of the `[cluster]` section.
fn cluster_error(error: ShardingError) -> ClusterError {
    match error {
        ShardingError::OutOfRange { key, reason } => ClusterError::OutOfRange {
            key: section_key(key),
            reason,
        },
        // `settings` and `validate` refuse nothing else.
        other => ClusterError::InvalidSettings(other.to_string()),
    }
}

/// A `ShardingSettings` field's key in the `[cluster]` section.
fn section_key(field: &'static str) -> &'static str {
    match field {
        "retry_interval" => "sharding.retry_interval",
        "rebalance_interval" => "sharding.rebalance_interval",
        "handoff_timeout" => "sharding.handoff_timeout",
        "shard_start_timeout" => "sharding.shard_start_timeout",
        "shard_region_query_timeout" => "sharding.shard_region_query_timeout",
        "shard.passivation_check_interval" => "sharding.passivation_check_interval",
        "remote_batch_messages" => "sharding.remote_batch_messages",
        "role" => "sharding.role",
        "shard.passivation.idle_timeout" => "sharding.passivation_idle_timeout",
        "shard.passivation.max_active" => "sharding.passivation_active_entity_limit",
        "rebalance_absolute_limit" => "sharding.rebalance_absolute_limit",
        "rebalance_relative_limit" => "sharding.rebalance_relative_limit",
        other => other,
    }
}

#[cfg(test)]
#[path = "section_tests.rs"]
mod tests;
