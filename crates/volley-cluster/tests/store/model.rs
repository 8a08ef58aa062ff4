//! The redb store against the in-memory model, and across reopens.

use proptest::prelude::*;
use volley_cluster::sharding::store::{MemoryStore, RedbStore, RememberStore, StoreUpdate};
use volley_cluster::sharding::ShardId;

/// One operation of the trait, on a small space of names so that random
/// sequences hit the same keys often.
#[derive(Debug, Clone)]
enum Op {
    Update(&'static str, u32, StoreUpdate),
    RemoveShard(&'static str, u32),
    AddShard(&'static str, u32),
}

const TYPES: [&str; 2] = ["cart", "user"];
// Shards at the ends of the range check the key ranges' bounds.
const SHARDS: [u32; 4] = [0, 1, 7, u32::MAX];

fn entity_id() -> impl Strategy<Value = String> {
    // Short ids collide often; a few carry bytes that sort around others.
    prop_oneof![
        "[a-c]{1,2}".prop_map(String::from),
        Just("\u{0}".to_owned()),
        Just("é".to_owned()),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let name = prop::sample::select(TYPES.to_vec());
    let shard = prop::sample::select(SHARDS.to_vec());
    let ids = || prop::collection::vec(entity_id(), 0..4);
    prop_oneof![
        4 => (name.clone(), shard.clone(), ids(), ids()).prop_map(|(n, s, started, stopped)| {
            Op::Update(n, s, StoreUpdate { started, stopped })
        }),
        1 => (name.clone(), shard.clone()).prop_map(|(n, s)| Op::RemoveShard(n, s)),
        1 => (name, shard).prop_map(|(n, s)| Op::AddShard(n, s)),
    ]
}

fn apply(store: &dyn RememberStore, op: &Op) {
    match op {
        Op::Update(name, shard, update) => store.update(name, ShardId(*shard), update),
        Op::RemoveShard(name, shard) => store.remove_shard(name, ShardId(*shard)),
        Op::AddShard(name, shard) => store.add_shard(name, ShardId(*shard)),
    }
    .expect("the write succeeds");
}

/// Every read of the trait answers alike on both stores.
fn assert_same(model: &MemoryStore, store: &RedbStore) {
    for name in TYPES {
        let (expected, actual) = (model.allocated_shards(name), store.allocated_shards(name));
        assert_eq!(
            expected.unwrap(),
            actual.unwrap(),
            "allocated shards of {name}"
        );
        let expected = model.shards_with_entities(name).unwrap();
        assert_eq!(
            expected,
            store.shards_with_entities(name).unwrap(),
            "{name}"
        );
        for shard in SHARDS.map(ShardId) {
            let expected = model.entities(name, shard).unwrap();
            let actual = store.entities(name, shard).unwrap();
            assert_eq!(expected, actual, "entities of {name} {shard}");
        }
    }
}

proptest! {
    // Each case syncs a file per write: few cases, long sequences.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_redb_store_answers_as_the_model_and_keeps_it_across_a_reopen(
        ops in prop::collection::vec(op(), 1..40),
        reopen_at in 0usize..40,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("remember.redb");
        let model = MemoryStore::new();
        let mut store = RedbStore::open(&path).unwrap();
        for (i, op) in ops.iter().enumerate() {
            if i == reopen_at {
                drop(store);
                store = RedbStore::open(&path).unwrap();
            }
            apply(&model, op);
            apply(&store, op);
            assert_same(&model, &store);
        }
        drop(store);
        assert_same(&model, &RedbStore::open(&path).unwrap());
    }
}

#[test]
fn a_reopened_file_keeps_entities_and_shards_of_every_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remember.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        let started = StoreUpdate::started(["a", "b", "c"]);
        store.update("cart", ShardId(3), &started).unwrap();
        store
            .update("cart", ShardId(3), &StoreUpdate::stopped(["b"]))
            .unwrap();
        store
            .update("user", ShardId(3), &StoreUpdate::started(["x"]))
            .unwrap();
        store.add_shard("cart", ShardId(3)).unwrap();
        store.add_shard("cart", ShardId(9)).unwrap();
    }
    let store = RedbStore::open(&path).unwrap();
    let cart: Vec<String> = store
        .entities("cart", ShardId(3))
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(cart, ["a", "c"]);
    let user: Vec<String> = store
        .entities("user", ShardId(3))
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(user, ["x"]);
    let shards = store.allocated_shards("cart").unwrap();
    assert_eq!(
        shards.into_iter().collect::<Vec<_>>(),
        [ShardId(3), ShardId(9)]
    );
    assert!(store.allocated_shards("user").unwrap().is_empty());
}
