//! The resolver's settings, named as Akka's
//! `akka.cluster.split-brain-resolver` section, and their validation.

use std::str::FromStr;
use std::time::Duration;

use crate::sbr::strategy::Strategy;

/// `stable_after` by cluster size when it is not set: Pekko's recommended
/// minimum for each size (its split-brain-resolver documentation), a size
/// taking the row of the next size up, and 30 s beyond 1,000 members.
pub const STABLE_AFTER_BY_SIZE: [(usize, Duration); 6] = [
    (5, Duration::from_secs(7)),
    (10, Duration::from_secs(10)),
    (20, Duration::from_secs(13)),
    (50, Duration::from_secs(17)),
    (100, Duration::from_secs(20)),
    (1000, Duration::from_secs(30)),
];

/// The least `down_all_when_unstable` derives to when `On`.
pub const MIN_DERIVED_DOWN_ALL_WHEN_UNSTABLE: Duration = Duration::from_secs(4);

/// The strategy names `active_strategy` accepts.
pub const STRATEGY_NAMES: [&str; 4] = ["keep-majority", "static-quorum", "keep-oldest", "down-all"];

/// Settings of the split-brain resolver (`[cluster.split_brain_resolver]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SbrSettings {
    /// Which strategy decides. Default: keep-majority.
    pub active_strategy: ActiveStrategy,
    /// How long membership and reachability must stay unchanged before the
    /// strategy decides. Default: by cluster size.
    pub stable_after: StableAfter,
    /// Down all members when no stable state is reached within
    /// `stable_after` plus this of the first reachability change. Default:
    /// on.
    pub down_all_when_unstable: DownAllWhenUnstable,
    /// `static-quorum`'s section.
    pub static_quorum: StaticQuorumSettings,
    /// `keep-majority`'s section.
    pub keep_majority: KeepMajoritySettings,
    /// `keep-oldest`'s section.
    pub keep_oldest: KeepOldestSettings,
}

impl Default for SbrSettings {
    fn default() -> Self {
        Self {
            active_strategy: ActiveStrategy::KeepMajority,
            stable_after: StableAfter::BySize,
            down_all_when_unstable: DownAllWhenUnstable::On,
            static_quorum: StaticQuorumSettings::default(),
            keep_majority: KeepMajoritySettings::default(),
            keep_oldest: KeepOldestSettings::default(),
        }
    }
}

/// The strategies (`lease-majority` is not offered: volley has no lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActiveStrategy {
    /// `keep-majority`.
    KeepMajority,
    /// `static-quorum`.
    StaticQuorum,
    /// `keep-oldest`.
    KeepOldest,
    /// `down-all`.
    DownAll,
}

impl FromStr for ActiveStrategy {
    type Err = SbrSettingsError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.trim().to_ascii_lowercase().as_str() {
            "keep-majority" => Ok(ActiveStrategy::KeepMajority),
            "static-quorum" => Ok(ActiveStrategy::StaticQuorum),
            "keep-oldest" => Ok(ActiveStrategy::KeepOldest),
            "down-all" => Ok(ActiveStrategy::DownAll),
            "lease-majority" => Err(SbrSettingsError::LeaseMajorityUnsupported),
            _ => Err(SbrSettingsError::UnknownStrategy {
                name: name.to_owned(),
            }),
        }
    }
}

/// `stable_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StableAfter {
    /// From [`STABLE_AFTER_BY_SIZE`], on the number of counted members
    /// (Up and Leaving) when the wait starts.
    BySize,
    /// This long, whatever the size (zero decides at the first tick).
    Fixed(Duration),
}

impl StableAfter {
    /// The duration in force for a cluster of `members` counted members.
    pub fn for_size(self, members: usize) -> Duration {
        match self {
            StableAfter::Fixed(d) => d,
            StableAfter::BySize => STABLE_AFTER_BY_SIZE
                .iter()
                .find(|(size, _)| members <= *size)
                .map_or(Duration::from_secs(30), |(_, d)| *d),
        }
    }
}

/// `down_all_when_unstable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownAllWhenUnstable {
    /// Three quarters of the `stable_after` in force, at least 4 s.
    On,
    /// Never down all for instability.
    Off,
    /// This long after `stable_after`; must be above zero (use `Off`).
    After(Duration),
}

impl DownAllWhenUnstable {
    /// The margin in force with `stable_after`; `None` when off.
    pub fn margin(self, stable_after: Duration) -> Option<Duration> {
        match self {
            DownAllWhenUnstable::On => {
                Some((stable_after.saturating_mul(3) / 4).max(MIN_DERIVED_DOWN_ALL_WHEN_UNSTABLE))
            }
            DownAllWhenUnstable::Off => None,
            DownAllWhenUnstable::After(d) => Some(d),
        }
    }
}

/// `static_quorum`'s settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StaticQuorumSettings {
    /// The fewest members a side needs to stay; required for this strategy.
    pub quorum_size: Option<usize>,
    /// Count only members with this role.
    pub role: Option<String>,
}

/// `keep_majority`'s settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeepMajoritySettings {
    /// Count only members with this role.
    pub role: Option<String>,
}

/// `keep_oldest`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepOldestSettings {
    /// An oldest member cut off from two or more others downs itself.
    /// Default: on.
    pub down_if_alone: bool,
    /// Look only at members with this role.
    pub role: Option<String>,
}

impl Default for KeepOldestSettings {
    fn default() -> Self {
        Self {
            down_if_alone: true,
            role: None,
        }
    }
}

/// Settings the resolver refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SbrSettingsError {
    /// `active_strategy` names no strategy.
    #[error("unknown split-brain resolver strategy {name:?}; one of {STRATEGY_NAMES:?}")]
    UnknownStrategy {
        /// The name given.
        name: String,
    },
    /// `lease-majority` needs a lease, which volley does not have.
    #[error("the lease-majority strategy is not supported: volley has no lease")]
    LeaseMajorityUnsupported,
    /// static-quorum was chosen without `static_quorum.quorum_size`.
    #[error("static-quorum needs static_quorum.quorum_size")]
    QuorumSizeMissing,
    /// `static_quorum.quorum_size` is zero.
    #[error("static_quorum.quorum_size must be at least 1")]
    QuorumSizeZero,
    /// `down_all_when_unstable` is a zero duration.
    #[error("down_all_when_unstable must be above zero, or off")]
    DownAllWhenUnstableZero,
    /// A role is the empty string (leave it unset to count every member).
    #[error("{strategy}.role is empty; leave it unset to count every member")]
    EmptyRole {
        /// The section holding it.
        strategy: &'static str,
    },
}

impl SbrSettings {
    /// Checks the settings and gives the strategy they choose.
    pub fn strategy(&self) -> Result<Strategy, SbrSettingsError> {
        if self.down_all_when_unstable == DownAllWhenUnstable::After(Duration::ZERO) {
            return Err(SbrSettingsError::DownAllWhenUnstableZero);
        }
        let strategy = match self.active_strategy {
            ActiveStrategy::KeepMajority => Strategy::KeepMajority {
                role: role(&self.keep_majority.role, "keep_majority")?,
            },
            ActiveStrategy::StaticQuorum => Strategy::StaticQuorum {
                quorum_size: match self.static_quorum.quorum_size {
                    None => return Err(SbrSettingsError::QuorumSizeMissing),
                    Some(0) => return Err(SbrSettingsError::QuorumSizeZero),
                    Some(size) => size,
                },
                role: role(&self.static_quorum.role, "static_quorum")?,
            },
            ActiveStrategy::KeepOldest => Strategy::KeepOldest {
                down_if_alone: self.keep_oldest.down_if_alone,
                role: role(&self.keep_oldest.role, "keep_oldest")?,
            },
            ActiveStrategy::DownAll => Strategy::DownAll,
        };
        Ok(strategy)
    }
}

fn role(role: &Option<String>, strategy: &'static str) -> Result<Option<String>, SbrSettingsError> {
    match role {
        Some(r) if r.is_empty() => Err(SbrSettingsError::EmptyRole { strategy }),
        other => Ok(other.clone()),
    }
}
