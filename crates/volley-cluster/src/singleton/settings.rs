//! The singleton's settings (Akka's `cluster.singleton` and
//! `cluster.singleton-proxy` sections), as typed fields.

use std::time::Duration;

use crate::runtime::{ClusterError, ClusterSettings};

/// How a cluster singleton is placed, handed over and reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingletonSettings {
    /// The singleton's name: its manager is `/user/<name>` on every node,
    /// the instance `/user/<name>/singleton` on the oldest, the proxy
    /// `/user/<name>-proxy`.
    pub name: String,
    /// Only members with this role host it (Akka's `role`); `None`: any.
    pub role: Option<String>,
    /// How often a new oldest asks the previous one to hand over, and how
    /// often a proxy asks the oldest where the singleton is (Akka's
    /// `hand-over-retry-interval` and `singleton-identification-interval`).
    pub retry_interval: Duration,
    /// Hand-over requests to a previous oldest that left, after which the
    /// new oldest starts without its answer (Akka's
    /// `min-number-of-hand-over-retries`).
    pub max_hand_over_retries: u32,
    /// How long a handing-over manager waits for the proxies to confirm
    /// that they buffer before it stops the instance.
    pub pause_timeout: Duration,
    /// Messages a proxy keeps while it knows of no instance (Akka's
    /// `buffer-size`); beyond it the oldest is dropped and counted.
    pub buffer_size: usize,
    /// How long a new oldest waits after the removal of a downed older
    /// member before it starts (Akka's `down-removal-margin`): the
    /// resolver on the downed member's side of a partition downs it about
    /// when the other side does, not before, so this covers the time its
    /// own shutdown takes. Set it to the resolver's `stable_after`.
    pub down_removal_margin: Duration,
}

impl SingletonSettings {
    /// The defaults, under `name`.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            role: None,
            retry_interval: Duration::from_secs(1),
            max_hand_over_retries: 15,
            pause_timeout: Duration::from_secs(2),
            buffer_size: 1000,
            down_removal_margin: Duration::from_secs(7),
        }
    }

    /// Only members with `role` host the singleton.
    #[must_use]
    pub fn with_role(mut self, role: &str) -> Self {
        self.role = Some(role.to_owned());
        self
    }

    /// Checks the values: a refused one is named by its key.
    pub fn validate(&self) -> Result<(), SingletonError> {
        let out_of_range = |key, reason| Err(SingletonError::OutOfRange { key, reason });
        if self.name.is_empty() || self.name.contains('/') {
            return out_of_range("name", "must be a non-empty actor name without '/'");
        }
        if self.retry_interval.is_zero() {
            return out_of_range("retry_interval", "must be above zero");
        }
        if self.pause_timeout.is_zero() {
            return out_of_range("pause_timeout", "must be above zero");
        }
        if self.buffer_size == 0 {
            return out_of_range("buffer_size", "must be at least 1");
        }
        Ok(())
    }

    /// The settings of the singleton `name` from the `[cluster.singleton]`
    /// section of the system's settings (defaults when absent), checked.
    /// Without a `down_removal_margin` there, the resolver's fixed
    /// `stable_after` is taken (`[cluster.split_brain_resolver]`).
    pub fn from_system_settings(
        settings: &volley::Settings,
        name: &str,
    ) -> Result<Self, SingletonError> {
        let cluster = ClusterSettings::from_system_settings(settings)?;
        let resolver = cluster.split_brain_resolver.settings()?;
        let singleton = cluster.singleton.settings(name, resolver.as_ref());
        singleton.validate()?;
        Ok(singleton)
    }
}

/// Why a singleton (or its proxy) did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SingletonError {
    /// A setting is out of its range.
    #[error("singleton setting {key} {reason}")]
    OutOfRange {
        /// The setting, as `SingletonSettings` and `[cluster.singleton]`
        /// name it.
        key: &'static str,
        /// What it must be.
        reason: &'static str,
    },
    /// The `[cluster]` section, `[cluster.singleton]` included, does not
    /// parse or is out of range.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The system runs no `Cluster` (start one first).
    #[error("the actor system runs no cluster")]
    NoCluster,
    /// Spawning the manager or the proxy failed (a name in use, or the
    /// system terminating).
    #[error("cannot spawn the singleton's actors: {0}")]
    Spawn(#[from] volley::SpawnError),
    /// The system is terminating.
    #[error("the actor system is terminating")]
    SystemTerminated,
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
