//! An entity type as given to [`ClusterSharding::init`](super::ClusterSharding::init):
//! its key, how its actors are made, how ids map to shards, and settings.

use std::sync::Arc;

use volley::{Actor, Props};

use super::entity_ref::EntityTypeKey;
use super::extractor::{HashShards, ShardExtractor};
use super::settings::ShardingSettings;
use super::shard::EntityFactory;

/// Pekko's default number of shards per entity type.
pub const DEFAULT_NUMBER_OF_SHARDS: u32 = 1000;

/// A sharded entity type, before it starts.
pub struct Entity<A: Actor> {
    pub(crate) key: EntityTypeKey<A::Msg>,
    pub(crate) factory: EntityFactory<A>,
    pub(crate) extractor: Arc<dyn ShardExtractor>,
    pub(crate) number_of_shards: u32,
    pub(crate) settings: ShardingSettings,
}

impl<A: Actor> Entity<A> {
    /// Entities of type `key`, each made by `factory` from its id; ids
    /// hashed over [`DEFAULT_NUMBER_OF_SHARDS`] shards ([`HashShards`]).
    pub fn new(
        key: EntityTypeKey<A::Msg>,
        factory: impl Fn(&str) -> Props<A> + Send + Sync + 'static,
    ) -> Self {
        let shards = HashShards::new(DEFAULT_NUMBER_OF_SHARDS).expect("more than zero shards");
        Self {
            key,
            factory: Arc::new(factory),
            extractor: Arc::new(shards),
            number_of_shards: DEFAULT_NUMBER_OF_SHARDS,
            settings: ShardingSettings::default(),
        }
    }

    /// Maps ids to `number_of_shards` shards with `extractor`, which must
    /// give the same answer on every node. What it gives is checked on
    /// each [`entity_ref`](super::Sharding::entity_ref): a panic or a
    /// shard out of range is an error there.
    pub fn with_extractor(mut self, extractor: impl ShardExtractor, number_of_shards: u32) -> Self {
        self.extractor = Arc::new(extractor);
        self.number_of_shards = number_of_shards;
        self
    }

    /// These settings instead of the defaults.
    pub fn with_settings(mut self, settings: ShardingSettings) -> Self {
        self.settings = settings;
        self
    }
}
