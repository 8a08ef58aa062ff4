//! Remembered entities: a durable record of which entities each shard
//! runs, and of the shards the coordinator allocated, so that they start
//! again after their shard moves or the whole cluster restarts (Pekko's
//! `remember-entities`, its `RememberEntitiesShardStore` and
//! `RememberEntitiesCoordinatorStore`).
//!
//! Optional: sharding without a store keeps nothing on disk, and an
//! entity starts only when a message comes for it. [`RememberStore`] is
//! the trait the region and the coordinator will call; [`MemoryStore`]
//! implements it in memory (tests, and the model the file store is
//! checked against), and `RedbStore` (cargo feature `redb-store`) in a
//! file on the node's disk, with the embedded database redb.

mod error;
mod location;
mod memory;
#[cfg(feature = "redb-store")]
mod redb_store;
mod remember;

pub use error::{SharedStoreError, StoreError};
pub use location::StoreLocation;
pub use memory::MemoryStore;
#[cfg(feature = "redb-store")]
pub use redb_store::RedbStore;
pub use remember::{RememberStore, StoreUpdate};
