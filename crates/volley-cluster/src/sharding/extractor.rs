//! Which shard an entity lives in. Every node must answer the same for
//! the same id, in every version, or two nodes could start one entity in
//! two shards: so the default is a specified hash, never `std`'s.

use std::hash::Hasher;
use std::panic::{catch_unwind, AssertUnwindSafe};

use fnv::FnvHasher;

use super::allocation::ShardId;

/// Maps an entity id to its shard. It runs on every message sent to an
/// entity, so it should be cheap; it must be deterministic and the same
/// on every node.
pub trait ShardExtractor: Send + Sync + 'static {
    /// The shard of `entity_id`, below the entity type's shard count.
    fn shard_of(&self, entity_id: &str) -> ShardId;
}

/// The default extractor: FNV-1a (64 bits) of the id's UTF-8 bytes,
/// modulo the number of shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashShards {
    number_of_shards: u32,
}

impl HashShards {
    /// Hashes ids over `number_of_shards` shards (at least 1).
    pub fn new(number_of_shards: u32) -> Result<Self, ShardOfError> {
        if number_of_shards == 0 {
            return Err(ShardOfError::NoShards);
        }
        Ok(Self { number_of_shards })
    }
}

impl ShardExtractor for HashShards {
    fn shard_of(&self, entity_id: &str) -> ShardId {
        let mut hasher = FnvHasher::default();
        hasher.write(entity_id.as_bytes());
        ShardId((hasher.finish() % u64::from(self.number_of_shards)) as u32)
    }
}

/// Why a message found no shard. None of these stops the node: the
/// message is refused with the reason, and counted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardOfError {
    /// An entity type needs at least one shard.
    #[error("an entity type needs at least one shard")]
    NoShards,
    /// The entity id was empty.
    #[error("an entity id must not be empty")]
    EmptyEntityId,
    /// The extractor panicked on this id.
    #[error("the shard extractor panicked on entity id {entity_id:?}: {reason}")]
    ExtractorPanicked {
        /// The id it was given.
        entity_id: String,
        /// The panic's message, when it had one.
        reason: String,
    },
    /// The extractor gave a shard outside the entity type's range.
    #[error("the shard extractor gave {shard} for entity id {entity_id:?}, but there are only {number_of_shards} shards")]
    ShardOutOfRange {
        /// The id it was given.
        entity_id: String,
        /// What it returned.
        shard: ShardId,
        /// The entity type's shard count.
        number_of_shards: u32,
    },
}

/// The shard of `entity_id` by `extractor`, checked: an empty id, a
/// panicking extractor and a shard out of range are errors, never a crash.
pub fn checked_shard_of(
    extractor: &dyn ShardExtractor,
    number_of_shards: u32,
    entity_id: &str,
) -> Result<ShardId, ShardOfError> {
    if entity_id.is_empty() {
        return Err(ShardOfError::EmptyEntityId);
    }
    let shard =
        catch_unwind(AssertUnwindSafe(|| extractor.shard_of(entity_id))).map_err(|payload| {
            ShardOfError::ExtractorPanicked {
                entity_id: entity_id.to_owned(),
                reason: panic_reason(payload.as_ref()),
            }
        })?;
    if shard.0 >= number_of_shards {
        return Err(ShardOfError::ShardOutOfRange {
            entity_id: entity_id.to_owned(),
            shard,
            number_of_shards,
        });
    }
    Ok(shard)
}

pub(crate) fn panic_reason(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv_1a_of_the_bytes_and_stays_so() {
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c (its published test vector).
        let shards = HashShards::new(u32::MAX).unwrap();
        assert_eq!(
            shards.shard_of("a"),
            ShardId((0xaf63_dc4c_8601_ec8c_u64 % u64::from(u32::MAX)) as u32)
        );
        let hundred = HashShards::new(100).unwrap();
        let ids: Vec<u32> = ["user-1", "user-2", "order-77"]
            .iter()
            .map(|id| hundred.shard_of(id).0)
            .collect();
        let again: Vec<u32> = ["user-1", "user-2", "order-77"]
            .iter()
            .map(|id| hundred.shard_of(id).0)
            .collect();
        assert_eq!(ids, again);
        assert!(ids.iter().all(|&s| s < 100));
    }

    #[test]
    fn ids_spread_over_every_shard() {
        let shards = HashShards::new(10).unwrap();
        let mut seen = [0u32; 10];
        for n in 0..10_000 {
            seen[shards.shard_of(&format!("entity-{n}")).0 as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn zero_shards_is_refused() {
        assert_eq!(HashShards::new(0), Err(ShardOfError::NoShards));
    }

    struct Panics;
    impl ShardExtractor for Panics {
        fn shard_of(&self, entity_id: &str) -> ShardId {
            panic!("cannot place {entity_id}")
        }
    }

    struct Fixed(u32);
    impl ShardExtractor for Fixed {
        fn shard_of(&self, _: &str) -> ShardId {
            ShardId(self.0)
        }
    }

    #[test]
    fn a_panicking_extractor_is_an_error_with_its_message() {
        let error = checked_shard_of(&Panics, 10, "user-1").unwrap_err();
        assert_eq!(
            error,
            ShardOfError::ExtractorPanicked {
                entity_id: "user-1".into(),
                reason: "cannot place user-1".into(),
            }
        );
    }

    #[test]
    fn a_shard_out_of_range_and_an_empty_id_are_errors() {
        assert_eq!(
            checked_shard_of(&Fixed(10), 10, "x"),
            Err(ShardOfError::ShardOutOfRange {
                entity_id: "x".into(),
                shard: ShardId(10),
                number_of_shards: 10,
            })
        );
        assert_eq!(checked_shard_of(&Fixed(9), 10, "x"), Ok(ShardId(9)));
        assert_eq!(
            checked_shard_of(&Fixed(0), 10, ""),
            Err(ShardOfError::EmptyEntityId)
        );
    }
}
