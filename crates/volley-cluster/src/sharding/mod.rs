//! Cluster sharding: entities addressed by id, spread over the members.
//!
//! Built so far, each a pure function tested on its own:
//! - the coordinator's allocation strategy ([`allocation`]), tested with
//!   the scenarios of Akka's `LeastShardAllocationStrategySpec`;
//! - the entity-to-shard mapping ([`ShardExtractor`], [`HashShards`]) and
//!   its checks ([`checked_shard_of`]);
//! - which active entities to passivate ([`ActiveEntities`]): idle ones,
//!   and the least recently used past a limit;
//! - the remembered-entities store ([`store`]), not yet called.
//!
//! Regions, shards, the coordinator singleton and the hand-off protocol
//! are not built yet (docs/reference/sharding.md, "Not yet").

pub mod allocation;
mod entity_name;
mod extractor;
mod passivation;
mod shard;
pub mod store;
mod version;

pub use allocation::{
    AllocationSettingsError, LeastShardAllocation, RebalanceGate, RegionEntry, ShardId,
};
pub use extractor::{checked_shard_of, HashShards, ShardExtractor, ShardOfError};
pub use passivation::{ActiveEntities, PassivationSettings};
pub use shard::{EntityFactory, HandedOff, Shard, ShardMsg, ShardSettings};
pub use version::AppVersion;
