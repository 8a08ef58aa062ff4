use super::MemoryStore;
use crate::sharding::store::{RememberStore, StoreError, StoreUpdate};
use crate::sharding::ShardId;

#[test]
fn started_ids_are_kept_per_type_and_shard_and_stopped_ones_removed() {
    let store = MemoryStore::new();
    let update = StoreUpdate {
        started: vec!["a".into(), "b".into()],
        stopped: vec!["b".into()],
    };
    store.update("cart", ShardId(1), &update).unwrap();
    store
        .update("user", ShardId(2), &StoreUpdate::started(["c"]))
        .unwrap();
    let cart: Vec<String> = store
        .entities("cart", ShardId(1))
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(
        cart,
        ["a"],
        "an id both started and stopped ends up removed"
    );
    assert!(store.entities("cart", ShardId(2)).unwrap().is_empty());
    let shards = store.shards_with_entities("user").unwrap();
    assert_eq!(shards.into_iter().collect::<Vec<_>>(), [ShardId(2)]);
    store
        .update("cart", ShardId(1), &StoreUpdate::stopped(["a"]))
        .unwrap();
    assert!(store.shards_with_entities("cart").unwrap().is_empty());
}

#[test]
fn removing_a_shard_forgets_its_entities_but_not_its_allocation() {
    let store = MemoryStore::new();
    store
        .update("cart", ShardId(1), &StoreUpdate::started(["a"]))
        .unwrap();
    store.add_shard("cart", ShardId(1)).unwrap();
    store.remove_shard("cart", ShardId(1)).unwrap();
    assert!(store.entities("cart", ShardId(1)).unwrap().is_empty());
    let allocated = store.allocated_shards("cart").unwrap();
    assert_eq!(allocated.into_iter().collect::<Vec<_>>(), [ShardId(1)]);
}

#[test]
fn an_empty_entity_id_is_refused() {
    let store = MemoryStore::new();
    let update = StoreUpdate::stopped([""]);
    let refused = store.update("cart", ShardId(0), &update);
    assert!(matches!(refused, Err(StoreError::EmptyEntityId)));
}
