//! Cluster sharding: entities addressed by id, spread over the members.
//!
//! Built so far: the coordinator's allocation strategy ([`allocation`]),
//! a pure function of the current allocation, tested on its own as Akka's
//! `LeastShardAllocationStrategySpec` tests Akka's. Regions, shards, the
//! coordinator singleton and the hand-off protocol are not built yet
//! (docs/cluster.md, "Not yet").

pub mod allocation;
mod version;

pub use allocation::{
    AllocationSettingsError, LeastShardAllocation, RebalanceGate, RegionEntry, ShardId,
};
pub use version::AppVersion;
