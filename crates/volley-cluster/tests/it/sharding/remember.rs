//! Remembered entities on one node (after Pekko's
//! `ClusterShardingRememberEntitiesSpec` and
//! `RememberEntitiesFailureSpec`): entities start again with their shard
//! from the store, a passivated one does not, one that stopped itself
//! does after its backoff, a failing store is reported and stops the
//! shard, and with the setting off nothing touches the store.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use volley::ActorSystem;
use volley_cluster::sharding::store::{
    MemoryStore, RedbStore, RememberStore, StoreError, StoreLocation, StoreUpdate,
};
use volley_cluster::sharding::{
    ClusterSharding, Entity, EntityTypeKey, HashShards, RememberStoreFailed, ShardId, Sharding,
    ShardingError, ShardingSettings,
};
use volley_testkit::{await_cond_within, dilated, TestProbe};

use super::{got, recorders, sorted, started, stopped, Event, Rec};

fn key() -> EntityTypeKey<Rec> {
    EntityTypeKey::new("remembered")
}

fn remembering(store: StoreLocation) -> ShardingSettings {
    ShardingSettings {
        remember_entities: true,
        remember_store: Some(store),
        ..ShardingSettings::default()
    }
}

fn init(system: &ActorSystem, settings: ShardingSettings) -> (Sharding<Rec>, TestProbe<Event>) {
    let (factory, events) = recorders(system);
    let entity = Entity::new(key(), move |id| factory(id)).with_settings(settings);
    (ClusterSharding::init(system, entity).unwrap(), events)
}

/// Waits until no actor of a stopped system holds the file: a new
/// instance can open it.
fn await_released(path: &Path) {
    await_cond_within(
        dilated(Duration::from_secs(10)),
        "the file is released",
        || RedbStore::open(path).is_ok(),
    );
}

fn remembered_in(path: &Path) -> BTreeSet<String> {
    let store = RedbStore::open(path).unwrap();
    let shards = store.shards_with_entities("remembered").unwrap();
    let ids = shards
        .into_iter()
        .flat_map(|shard| store.entities("remembered", shard).unwrap());
    ids.collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_start_again_from_the_file_after_a_restart_but_not_a_passivated_one() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("node.redb");
    let settings = remembering(StoreLocation::File(path.clone()));

    let system = ActorSystem::new("remember-file").unwrap();
    let (sharding, events) = init(&system, settings.clone());
    for id in ["a", "b", "c"] {
        sharding.entity_ref(id).unwrap().tell(Rec::Num(1));
    }
    let expected = sorted(vec![
        started("a"),
        got("a", 1),
        started("b"),
        got("b", 1),
        started("c"),
        got("c", 1),
    ]);
    assert_eq!(sorted(events.receive_n(6)), expected);
    sharding.entity_ref("b").unwrap().tell(Rec::Passivate);
    events.expect_msg(stopped("b"));
    system.terminate().await;
    // The entities stopped with their system: no stop is recorded for
    // them, only for the passivated one (its write ends before its
    // shard handles anything else, so before the system stopped).
    await_released(&path);
    assert_eq!(
        remembered_in(&path),
        BTreeSet::from(["a".into(), "c".into()])
    );

    let system = ActorSystem::new("remember-file").unwrap();
    let (_sharding, events) = init(&system, settings);
    // No message is sent: the region reports its remembered shards, the
    // coordinator places them, and each shard starts its entities.
    assert_eq!(
        sorted(events.receive_n(2)),
        sorted(vec![started("a"), started("c")])
    );
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_that_stops_itself_starts_again_and_idle_passivation_is_off() {
    let system = ActorSystem::new("remember-restart").unwrap();
    let mut settings = remembering(StoreLocation::Instance(Arc::new(MemoryStore::new())));
    settings.shard.entity_restart_backoff = Duration::from_millis(50);
    // Ignored while remembering, as in Pekko.
    settings.shard.passivation.idle_timeout = Some(Duration::from_millis(1));
    settings.shard.passivation_check_interval = Duration::from_millis(1);
    let (sharding, events) = init(&system, settings);
    let entity = sharding.entity_ref("phoenix").unwrap();
    entity.tell(Rec::Num(1));
    events.expect_msg(started("phoenix"));
    events.expect_msg(got("phoenix", 1));
    entity.tell(Rec::StopSelf);
    events.expect_msg(stopped("phoenix"));
    // Started again by the shard, with no message.
    events.expect_msg(started("phoenix"));
    entity.tell(Rec::Num(2));
    events.expect_msg(got("phoenix", 2));
    system.terminate().await;
}

/// A memory store whose operations fail while `failing` is set, and
/// that counts every call.
#[derive(Default)]
struct TestStore {
    inner: MemoryStore,
    failing: AtomicBool,
    calls: AtomicUsize,
}

impl TestStore {
    fn call(&self) -> Result<(), StoreError> {
        self.calls.fetch_add(1, SeqCst);
        if self.failing.load(SeqCst) {
            let source = std::io::Error::other("disk unplugged");
            return Err(StoreError::Io {
                path: "test".into(),
                source,
            });
        }
        Ok(())
    }
}

impl RememberStore for TestStore {
    fn update(&self, t: &str, shard: ShardId, update: &StoreUpdate) -> Result<(), StoreError> {
        self.call()?;
        self.inner.update(t, shard, update)
    }
    fn entities(&self, t: &str, shard: ShardId) -> Result<BTreeSet<String>, StoreError> {
        self.call()?;
        self.inner.entities(t, shard)
    }
    fn shards_with_entities(&self, t: &str) -> Result<BTreeSet<ShardId>, StoreError> {
        self.call()?;
        self.inner.shards_with_entities(t)
    }
    fn remove_shard(&self, t: &str, shard: ShardId) -> Result<(), StoreError> {
        self.call()?;
        self.inner.remove_shard(t, shard)
    }
    fn add_shard(&self, t: &str, shard: ShardId) -> Result<(), StoreError> {
        self.call()?;
        self.inner.add_shard(t, shard)
    }
    fn allocated_shards(&self, t: &str) -> Result<BTreeSet<ShardId>, StoreError> {
        self.call()?;
        self.inner.allocated_shards(t)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_store_is_reported_and_its_shard_stops_then_starts_again() {
    let system = ActorSystem::new("remember-failing").unwrap();
    let store = Arc::new(TestStore::default());
    let mut settings = remembering(StoreLocation::Instance(store.clone()));
    settings.shard_failure_backoff = Duration::from_millis(50);
    let failures = TestProbe::<RememberStoreFailed>::new(&system);
    system.event_stream().subscribe(failures.actor_ref());
    let (factory, events) = recorders(&system);
    let entity = Entity::new(key(), move |id| factory(id))
        .with_extractor(HashShards::new(1).unwrap(), 1)
        .with_settings(settings);
    let sharding = ClusterSharding::init(&system, entity).unwrap();
    let first = sharding.entity_ref("first").unwrap();
    first.tell(Rec::Num(1));
    events.expect_msg(started("first"));
    events.expect_msg(got("first", 1));

    store.failing.store(true, SeqCst);
    let second = sharding.entity_ref("second").unwrap();
    let dead_before = system.dead_letter_count();
    second.tell(Rec::Num(1));
    let failed = failures.expect_msg_pf(Some);
    assert_eq!(failed.entity_type, "remembered");
    assert_eq!(failed.shard, Some(second.shard()));
    assert_eq!(failed.operation, "record a start");
    assert!(
        matches!(&*failed.error.0, StoreError::Io { .. }),
        "{failed:?}"
    );
    // The shard stops, with its entity; the message is a dead letter.
    events.expect_msg(stopped("first"));
    // At least this one: the shard's restarts read the store, which
    // fails until it recovers.
    assert!(sharding.store_failures() >= 1);
    await_cond_within(dilated(Duration::from_secs(5)), "a dead letter", || {
        system.dead_letter_count() > dead_before
    });

    // The store recovers: after the backoff the region starts the shard
    // again, which starts its remembered entity without a message.
    store.failing.store(false, SeqCst);
    events.expect_msg(started("first"));
    second.tell(Rec::Num(2));
    events.expect_msg(started("second"));
    events.expect_msg(got("second", 2));
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_setting_off_nothing_is_read_or_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("unused.redb");
    let system = ActorSystem::new("remember-off").unwrap();
    let store = Arc::new(TestStore::default());
    let mut settings = remembering(StoreLocation::Instance(store.clone()));
    settings.remember_entities = false;
    let (sharding, events) = init(&system, settings.clone());
    let entity = sharding.entity_ref("plain").unwrap();
    entity.tell(Rec::Num(1));
    events.expect_msg(started("plain"));
    events.expect_msg(got("plain", 1));
    entity.tell(Rec::Passivate);
    events.expect_msg(stopped("plain"));
    entity.tell(Rec::StopSelf);
    events.expect_msg(started("plain"));
    events.expect_msg(stopped("plain"));
    // A second entity type naming a file: not even created.
    settings.remember_store = Some(StoreLocation::File(file.clone()));
    let (factory, _events) = recorders(&system);
    let other = Entity::new(EntityTypeKey::<Rec>::new("other"), move |id| factory(id));
    let other = ClusterSharding::init(&system, other.with_settings(settings)).unwrap();
    other.entity_ref("x").unwrap().tell(Rec::Num(1));
    system.terminate().await;
    assert_eq!(store.calls.load(SeqCst), 0);
    assert!(!file.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembering_without_a_store_or_with_a_bad_file_is_a_typed_error() {
    let system = ActorSystem::new("remember-refused").unwrap();
    let mut settings = ShardingSettings {
        remember_entities: true,
        ..ShardingSettings::default()
    };
    let (factory, _events) = recorders(&system);
    let entity = Entity::new(key(), move |id| factory(id));
    let refused = ClusterSharding::init(&system, entity.with_settings(settings.clone()));
    assert_eq!(refused.err(), Some(ShardingError::NoRememberStore));

    let missing = PathBuf::from("/nonexistent-folder/of/volley/node.redb");
    settings.remember_store = Some(StoreLocation::File(missing));
    let (factory, _events) = recorders(&system);
    let entity = Entity::new(key(), move |id| factory(id));
    match ClusterSharding::init(&system, entity.with_settings(settings)) {
        Err(ShardingError::Store(error)) => {
            assert!(matches!(&*error.0, StoreError::Io { .. }), "{error}")
        }
        other => panic!("expected a store error, got {:?}", other.err()),
    }
    system.terminate().await;
}
