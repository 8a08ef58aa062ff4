//! The `[cluster.split_brain_resolver]` section: Pekko's
//! `split-brain-resolver` keys with underscores, read into the resolver's
//! [`SbrSettings`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::runtime::error::ClusterError;
use crate::sbr::{
    DownAllWhenUnstable, KeepMajoritySettings, KeepOldestSettings, SbrSettings, StableAfter,
    StaticQuorumSettings,
};

/// `[cluster.split_brain_resolver]`, as written in the settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SplitBrainResolverSection {
    /// `keep-majority` (default), `static-quorum`, `keep-oldest`,
    /// `down-all`; `off` runs no resolver (only `Cluster::down` downs).
    pub active_strategy: String,
    /// How long membership and reachability must stay unchanged before
    /// the strategy decides. Absent: by cluster size (7 s up to 5 members).
    #[serde(with = "humantime_serde")]
    pub stable_after: Option<Duration>,
    /// `"on"` (default), `"off"`, or a duration after `stable_after`.
    pub down_all_when_unstable: String,
    /// `[cluster.split_brain_resolver.static_quorum]`.
    pub static_quorum: StaticQuorumSection,
    /// `[cluster.split_brain_resolver.keep_majority]`.
    pub keep_majority: RoleSection,
    /// `[cluster.split_brain_resolver.keep_oldest]`.
    pub keep_oldest: KeepOldestSection,
}

/// `static_quorum`'s keys.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StaticQuorumSection {
    /// The fewest members a side needs to stay; required for the strategy.
    pub quorum_size: Option<usize>,
    /// Count only members with this role.
    pub role: Option<String>,
}

/// A strategy's role key.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoleSection {
    /// Count only members with this role.
    pub role: Option<String>,
}

/// `keep_oldest`'s keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KeepOldestSection {
    /// An oldest member cut off from two or more others downs itself.
    pub down_if_alone: bool,
    /// Look only at members with this role.
    pub role: Option<String>,
}

impl Default for SplitBrainResolverSection {
    fn default() -> Self {
        SplitBrainResolverSection {
            active_strategy: "keep-majority".to_owned(),
            stable_after: None,
            down_all_when_unstable: "on".to_owned(),
            static_quorum: StaticQuorumSection::default(),
            keep_majority: RoleSection::default(),
            keep_oldest: KeepOldestSection::default(),
        }
    }
}

impl Default for KeepOldestSection {
    fn default() -> Self {
        let defaults = KeepOldestSettings::default();
        KeepOldestSection {
            down_if_alone: defaults.down_if_alone,
            role: defaults.role,
        }
    }
}

impl SplitBrainResolverSection {
    /// The resolver's settings, checked; `None` when `active_strategy` is
    /// `off`.
    pub fn settings(&self) -> Result<Option<SbrSettings>, ClusterError> {
        if self.active_strategy.trim().eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let settings = SbrSettings {
            active_strategy: self.active_strategy.parse()?,
            stable_after: self
                .stable_after
                .map_or(StableAfter::BySize, StableAfter::Fixed),
            down_all_when_unstable: self.down_all_when_unstable()?,
            static_quorum: StaticQuorumSettings {
                quorum_size: self.static_quorum.quorum_size,
                role: self.static_quorum.role.clone(),
            },
            keep_majority: KeepMajoritySettings {
                role: self.keep_majority.role.clone(),
            },
            keep_oldest: KeepOldestSettings {
                down_if_alone: self.keep_oldest.down_if_alone,
                role: self.keep_oldest.role.clone(),
            },
        };
        settings.strategy()?;
        Ok(Some(settings))
    }

    fn down_all_when_unstable(&self) -> Result<DownAllWhenUnstable, ClusterError> {
        match self.down_all_when_unstable.trim() {
            "on" => Ok(DownAllWhenUnstable::On),
            "off" => Ok(DownAllWhenUnstable::Off),
            other => humantime::parse_duration(other)
                .map(DownAllWhenUnstable::After)
                .map_err(|_| ClusterError::OutOfRange {
                    key: "split_brain_resolver.down_all_when_unstable",
                    reason: "must be \"on\", \"off\" or a duration such as \"5s\"",
                }),
        }
    }
}
