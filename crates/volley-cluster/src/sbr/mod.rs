//! The split-brain resolver (design §4): when members become unreachable,
//! decide which side of a partition stays and which members are downed, as
//! Akka's and Pekko's resolver does.
//!
//! - [`Strategy`] holds the strategies (keep-majority, static-quorum,
//!   keep-oldest, down-all) as pure functions of a [`Partition`], the
//!   members and reachability one node sees;
//! - [`SplitBrainResolver`] is the sans-IO state machine around them:
//!   `handle(now, input)` waits for `stable_after` without changes, lets
//!   the strategy decide on the leader, and downs all when reachability
//!   keeps changing past `stable_after + down_all_when_unstable`;
//! - [`SbrSettings`] are its settings, with Akka's names.
//!
//! It works on its own input types ([`SbrMember`], [`SbrInput`]): the
//! membership layer feeds them and acts on the [`Downing`]s it returns.

mod decision;
mod keep_majority;
mod keep_oldest;
mod member;
mod partition;
mod resolver;
mod settings;
mod strategy;

pub use decision::{Decision, DoubleIndirectlyConnected};
pub use member::{SbrMember, SbrStatus};
pub use partition::{Observation, Partition};
pub use resolver::{
    Downing, DowningReason, Instability, SbrInput, SplitBrainResolver, TICK_INTERVAL,
};
pub use settings::{
    ActiveStrategy, DownAllWhenUnstable, KeepMajoritySettings, KeepOldestSettings, SbrSettings,
    SbrSettingsError, StableAfter, StaticQuorumSettings, MIN_DERIVED_DOWN_ALL_WHEN_UNSTABLE,
    STABLE_AFTER_BY_SIZE, STRATEGY_NAMES,
};
pub use strategy::Strategy;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod resolver_tests;
#[cfg(test)]
mod scenario_harness;
#[cfg(test)]
mod scenario_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod strategy_tests;
