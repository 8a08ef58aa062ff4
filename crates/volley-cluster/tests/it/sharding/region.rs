//! `ClusterSharding::init` on one node: the region, its coordinator in
//! the same process, and `EntityRef` (after Pekko's `ClusterShardingSpec`
//! and `EntityPassivationSpec`, on one node).

use std::time::Duration;

use volley::ActorSystem;
use volley_cluster::sharding::{
    ClusterSharding, Entity, EntityTypeKey, PassivationSettings, ShardExtractor, ShardId,
    ShardOfError, Sharding, ShardingError, ShardingSettings,
};
use volley_testkit::TestProbe;

use super::{got, recorders, sorted, started, stopped, Event, Rec, Recorder};

const ASK: Duration = Duration::from_secs(5);

fn key() -> EntityTypeKey<Rec> {
    EntityTypeKey::new("recorder")
}

fn init(system: &ActorSystem, settings: ShardingSettings) -> (Sharding<Rec>, TestProbe<Event>) {
    let (factory, events) = recorders(system);
    let entity = Entity::new(key(), move |id| factory(id)).with_settings(settings);
    (ClusterSharding::init(system, entity).unwrap(), events)
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_starts_on_its_first_message_and_gets_them_in_order() {
    let system = ActorSystem::new("region-start").unwrap();
    let (sharding, events) = init(&system, ShardingSettings::default());
    // Sent at once: the region has not registered yet, so the first
    // messages wait for the shard's home.
    let entity = sharding.entity_ref("user 1/é").unwrap();
    for n in 1..=100 {
        entity.tell(Rec::Num(n));
    }
    events.expect_msg(started("user 1/é"));
    for n in 1..=100 {
        events.expect_msg(got("user 1/é", n));
    }
    entity.tell(Rec::Num(101));
    events.expect_msg(got("user 1/é", 101));
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_of_many_shards_each_get_their_messages_in_order() {
    let system = ActorSystem::new("region-many").unwrap();
    let (sharding, events) = init(&system, ShardingSettings::default());
    let ids: Vec<String> = (0..20).map(|n| format!("e{n}")).collect();
    let refs: Vec<_> = ids
        .iter()
        .map(|id| sharding.entity_ref(id).unwrap())
        .collect();
    assert!(
        refs.iter()
            .map(|r| r.shard())
            .collect::<std::collections::HashSet<_>>()
            .len()
            > 1
    );
    for n in 1..=10 {
        refs.iter().for_each(|r| r.tell(Rec::Num(n)));
    }
    let mut next = std::collections::HashMap::new();
    for event in events.receive_n(ids.len() * 11) {
        match event {
            Event::Got(id, n) => {
                let expected = next.entry(id.clone()).or_insert(1);
                assert_eq!(n, *expected, "{id} out of order");
                *expected += 1;
            }
            Event::Started(_) => {}
            Event::Stopped(id) => panic!("{id} stopped"),
        }
    }
    assert!(next.values().all(|&n| n == 11), "{next:?}");
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_from_async_code_and_from_a_callback_reach_the_entity() {
    let system = ActorSystem::new("region-ask").unwrap();
    let (sharding, events) = init(&system, ShardingSettings::default());
    let entity = sharding.entity_ref("asked").unwrap();
    let answer = entity.ask(|reply| Rec::Echo(7, reply), ASK).await.unwrap();
    assert_eq!(answer, "asked:7");
    events.expect_msg(started("asked"));

    let (done, answered) = tokio::sync::oneshot::channel();
    entity.ask_then(
        |reply| Rec::Echo(8, reply),
        ASK,
        move |answer| {
            let _ = done.send(answer);
        },
    );
    assert_eq!(answered.await.unwrap().unwrap(), "asked:8");

    let as_actor_ref = entity.to_actor_ref();
    let answer = as_actor_ref.ask(|reply| Rec::Echo(9, reply), ASK).await;
    assert_eq!(answer.unwrap(), "asked:9");
    system.terminate().await;
}

/// Idle entities passivated every 20 ms after 50 ms of quiet.
fn idle_passivation() -> ShardingSettings {
    let mut settings = ShardingSettings::default();
    settings.shard.passivation = PassivationSettings {
        idle_timeout: Some(Duration::from_millis(50)),
        max_active: None,
    };
    settings.shard.passivation_check_interval = Duration::from_millis(20);
    settings
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passivated_entity_is_started_again_by_its_next_message() {
    let system = ActorSystem::new("region-passivate").unwrap();
    let (sharding, events) = init(&system, idle_passivation());
    let entity = sharding.entity_ref("sleepy").unwrap();
    entity.tell(Rec::Num(1));
    events.expect_msg(started("sleepy"));
    events.expect_msg(got("sleepy", 1));
    events.expect_msg(stopped("sleepy"));
    entity.tell(Rec::Num(2));
    events.expect_msg(started("sleepy"));
    events.expect_msg(got("sleepy", 2));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_through_passivation_loses_nothing_and_keeps_order() {
    let system = ActorSystem::new("region-lru").unwrap();
    let mut settings = ShardingSettings::default();
    settings.shard.passivation.max_active = Some(1);
    settings.shard.passivation_check_interval = Duration::from_millis(1);
    let (factory, events) = recorders(&system);
    // One shard: both entities compete for the one active place.
    let entity = Entity::new(key(), move |id| factory(id))
        .with_extractor(volley_cluster::sharding::HashShards::new(1).unwrap(), 1)
        .with_settings(settings);
    let sharding = ClusterSharding::init(&system, entity).unwrap();
    let (a, b) = (
        sharding.entity_ref("a").unwrap(),
        sharding.entity_ref("b").unwrap(),
    );
    for n in 1..=200 {
        a.tell(Rec::Num(n));
        b.tell(Rec::Num(n));
    }
    let mut got_a = Vec::new();
    let mut got_b = Vec::new();
    while got_a.len() < 200 || got_b.len() < 200 {
        match events.receive_msg() {
            Event::Got(id, n) if id == "a" => got_a.push(n),
            Event::Got(_, n) => got_b.push(n),
            _ => {}
        }
    }
    assert_eq!(got_a, (1..=200).collect::<Vec<_>>());
    assert_eq!(got_b, (1..=200).collect::<Vec<_>>());
    assert_eq!(system.dead_letter_count(), 0);
    system.terminate().await;
}

struct Panics;
impl ShardExtractor for Panics {
    fn shard_of(&self, entity_id: &str) -> ShardId {
        if entity_id == "bad" {
            panic!("no shard for bad ids")
        }
        ShardId(0)
    }
}

struct TooHigh;
impl ShardExtractor for TooHigh {
    fn shard_of(&self, _: &str) -> ShardId {
        ShardId(10)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_extractor_and_a_shard_out_of_range_are_typed_errors() {
    let system = ActorSystem::new("region-bad-extractor").unwrap();
    let (factory, events) = recorders(&system);
    let panicking = Entity::new(EntityTypeKey::<Rec>::new("panicking"), move |id| {
        factory(id)
    })
    .with_extractor(Panics, 10);
    let panicking = ClusterSharding::init(&system, panicking).unwrap();
    let error = panicking.entity_ref("bad").err().unwrap();
    assert_eq!(
        error,
        ShardingError::ShardOf(ShardOfError::ExtractorPanicked {
            entity_id: "bad".into(),
            reason: "no shard for bad ids".into(),
        })
    );
    let (factory, _) = recorders(&system);
    let too_high = Entity::new(EntityTypeKey::<Rec>::new("too-high"), move |id| factory(id))
        .with_extractor(TooHigh, 10);
    let too_high = ClusterSharding::init(&system, too_high).unwrap();
    assert!(matches!(
        too_high.entity_ref("x"),
        Err(ShardingError::ShardOf(ShardOfError::ShardOutOfRange { .. }))
    ));
    // The node carries on: a good id of the panicking type still works.
    panicking.entity_ref("good").unwrap().tell(Rec::Num(1));
    events.expect_msg(started("good"));
    events.expect_msg(got("good", 1));
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_or_mistyped_entity_type_and_a_second_init_are_typed_errors() {
    let system = ActorSystem::new("region-unknown").unwrap();
    let unknown = ClusterSharding::entity_ref(&system, &EntityTypeKey::<Rec>::new("nobody"), "x");
    assert_eq!(
        unknown.err().unwrap(),
        ShardingError::UnknownEntityType("nobody".into())
    );
    let (sharding, events) = init(&system, ShardingSettings::default());
    let mistyped = ClusterSharding::get(&system, &EntityTypeKey::<u64>::new("recorder"));
    assert!(matches!(
        mistyped,
        Err(ShardingError::MessageTypeMismatch { .. })
    ));
    let (factory, _) = recorders(&system);
    let again = ClusterSharding::init(&system, Entity::new(key(), move |id| factory(id)));
    assert_eq!(
        again.err().unwrap(),
        ShardingError::AlreadyInitialised("recorder".into())
    );
    let (factory, _) = recorders(&system);
    let nameless = Entity::<Recorder>::new(EntityTypeKey::new(""), move |id| factory(id));
    assert!(matches!(
        ClusterSharding::init(&system, nameless),
        Err(ShardingError::InvalidTypeName(_))
    ));
    // Settings out of range are refused by name, and start nothing.
    let (factory, _) = recorders(&system);
    let spinning = ShardingSettings {
        retry_interval: Duration::ZERO,
        ..ShardingSettings::default()
    };
    let refused = Entity::<Recorder>::new(EntityTypeKey::new("refused"), move |id| factory(id))
        .with_settings(spinning);
    assert_eq!(
        ClusterSharding::init(&system, refused).err().unwrap(),
        ShardingError::OutOfRange {
            key: "retry_interval",
            reason: "must be above zero"
        }
    );
    assert!(matches!(
        ClusterSharding::get(&system, &EntityTypeKey::<Rec>::new("refused")),
        Err(ShardingError::UnknownEntityType(_))
    ));
    assert!(matches!(
        sharding.entity_ref(""),
        Err(ShardingError::ShardOf(ShardOfError::EmptyEntityId))
    ));
    // Found by key, the type sends as the handle from init does.
    let found = ClusterSharding::entity_ref(&system, &key(), "found").unwrap();
    found.tell(Rec::Num(3));
    assert_eq!(
        sorted(events.receive_n(2)),
        sorted(vec![started("found"), got("found", 3)])
    );
    system.terminate().await;
}
