//! The `[cluster.singleton]` section: the defaults of every singleton a
//! node starts, Akka's `cluster.singleton` keys with underscores and
//! durations with units. Each singleton's name is given in code.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::settings::{SingletonError, SingletonSettings};
use crate::runtime::ClusterError;
use crate::sbr::{SbrSettings, StableAfter};

/// `[cluster.singleton]`, as written in the settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SingletonSection {
    /// Only members with this role host singletons. Absent: any.
    pub role: Option<String>,
    /// Hand-over requests and proxy identification, each this often.
    /// Default 1 s.
    #[serde(with = "humantime_serde")]
    pub retry_interval: Duration,
    /// Requests to a silent leaver before taking over. Default 15.
    pub max_hand_over_retries: u32,
    /// How long a handing-over manager waits for the proxies. Default 2 s.
    #[serde(with = "humantime_serde")]
    pub pause_timeout: Duration,
    /// Messages a proxy keeps while it knows no instance. Default 1,000.
    pub buffer_size: usize,
    /// The wait after a downed oldest's removal. Absent: the resolver's
    /// `stable_after` when it is fixed, as Akka derives it; otherwise the
    /// default of `SingletonSettings` (docs/cluster.md says why).
    #[serde(with = "humantime_serde")]
    pub down_removal_margin: Option<Duration>,
}

impl Default for SingletonSection {
    fn default() -> Self {
        let defaults = SingletonSettings::new("singleton");
        SingletonSection {
            role: defaults.role,
            retry_interval: defaults.retry_interval,
            max_hand_over_retries: defaults.max_hand_over_retries,
            pause_timeout: defaults.pause_timeout,
            buffer_size: defaults.buffer_size,
            down_removal_margin: None,
        }
    }
}

impl SingletonSection {
    /// The settings of the singleton `name`, with `resolver` the
    /// cluster's split-brain resolver (`None`: off).
    pub fn settings(&self, name: &str, resolver: Option<&SbrSettings>) -> SingletonSettings {
        let derived = resolver.and_then(|r| match r.stable_after {
            StableAfter::Fixed(after) => Some(after),
            StableAfter::BySize => None,
        });
        let defaults = SingletonSettings::new(name);
        SingletonSettings {
            role: self.role.clone(),
            retry_interval: self.retry_interval,
            max_hand_over_retries: self.max_hand_over_retries,
            pause_timeout: self.pause_timeout,
            buffer_size: self.buffer_size,
            down_removal_margin: self
                .down_removal_margin
                .or(derived)
                .unwrap_or(defaults.down_removal_margin),
            ..defaults
        }
    }

    /// Checks the section's values, named by their key in `[cluster]`.
    pub(crate) fn validate(&self) -> Result<(), ClusterError> {
        match self.settings("singleton", None).validate() {
            Err(SingletonError::OutOfRange { key, reason }) => Err(ClusterError::OutOfRange {
                key: section_key(key),
                reason,
            }),
            _ => Ok(()),
        }
    }
}

/// A `SingletonSettings` field's key in the `[cluster]` section.
fn section_key(field: &'static str) -> &'static str {
    match field {
        "retry_interval" => "singleton.retry_interval",
        "pause_timeout" => "singleton.pause_timeout",
        "buffer_size" => "singleton.buffer_size",
        other => other,
    }
}
