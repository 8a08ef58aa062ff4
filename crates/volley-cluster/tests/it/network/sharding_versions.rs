//! A rolling update of sharded members (Pekko's
//! `RollingUpdateShardAllocationSpec`): the coordinator gives new shards to
//! the members of the newest `app_version`, and moves none while the
//! members run different versions.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use volley::Props;
use volley_cluster::sharding::{
    ClusterSharding, Entity, EntityTypeKey, HashShards, ShardExtractor, ShardId, Sharding,
    ShardingSettings,
};
use volley_cluster::Cluster;
use volley_testkit::await_cond_within;
use volley_testkit::remote::Node;

use super::sharding_roles::{Hit, Record, Target};
use super::{all_up, deadline, quick, sharding_nodes, start_nodes};

const SHARDS: u32 = 20;

fn start_sharding(node: &Node, record: &Record) -> Sharding<Hit> {
    let (record, port) = (record.clone(), node.remoting.address().port());
    let settings = ShardingSettings {
        retry_interval: Duration::from_millis(200),
        rebalance_interval: Duration::from_millis(200),
        ..ShardingSettings::default()
    };
    let entity = Entity::new(EntityTypeKey::new("versioned"), move |id| {
        let (id, record) = (id.to_owned(), record.clone());
        Props::new(move || Target {
            id: id.clone(),
            port,
            record: record.clone(),
        })
    })
    .with_extractor(HashShards::new(SHARDS).expect("shards"), SHARDS)
    .with_settings(settings);
    ClusterSharding::init_on_cluster(&node.system, &node.remoting, entity).expect("sharding starts")
}

/// One entity id for each shard in `shards`.
fn one_id_per_shard(shards: std::ops::Range<u32>) -> Vec<String> {
    let extractor = HashShards::new(SHARDS).expect("shards");
    shards
        .map(|shard| {
            (0..)
                .map(|n| format!("e-{n}"))
                .find(|id| extractor.shard_of(id) == ShardId(shard))
                .expect("an id for every shard")
        })
        .collect()
}

/// Tells each of `ids` through `sharding` and waits until all started.
fn start_entities(sharding: &Sharding<Hit>, ids: &[String], record: &Record) {
    for id in ids {
        sharding.entity_ref(id).expect("an id").tell(Hit(1));
    }
    await_cond_within(deadline(), "every entity started", || {
        let record = record.lock().expect("record");
        ids.iter().all(|id| record.contains_key(id))
    });
}

/// Two members on 1.0.0 host the first ten shards between them; a third
/// on 1.0.1 joins and gets every shard allocated after it registered,
/// while the first ten stay where they started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_shards_go_to_the_members_of_the_newest_version() {
    let mut nodes = sharding_nodes::<Hit>();
    let members = start_nodes(&mut nodes, 3).await;
    let seeds: Vec<&Node> = members[..2].iter().collect();
    let start_cluster = |at: usize, version: &str| {
        let mut settings = quick("test", &seeds);
        settings.app_version = version.to_owned();
        let node: &Node = &members[at];
        Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts")
    };
    let mut clusters = vec![start_cluster(0, "1.0.0"), start_cluster(1, "1.0.0")];
    all_up(&clusters);
    let record = Record::default();
    let old: Vec<Sharding<Hit>> = members[..2]
        .iter()
        .map(|n| start_sharding(n, &record))
        .collect();
    let first = one_id_per_shard(0..10);
    start_entities(&old[0], &first, &record);
    let port = |at: usize| members[at].remoting.address().port();
    let ports_of = |record: &Record| -> BTreeMap<String, Vec<u16>> {
        let record = record.lock().expect("record");
        record
            .iter()
            .map(|(id, (ports, _))| (id.clone(), ports.clone()))
            .collect()
    };
    let placed = ports_of(&record);
    for at in 0..2 {
        assert!(
            placed.values().any(|ports| ports == &[port(at)]),
            "member {at} on 1.0.0 hosts shards: {placed:?}"
        );
    }

    clusters.push(start_cluster(2, "1.0.1"));
    all_up(&clusters);
    let newest = start_sharding(&members[2], &record);
    await_regions(&old[0], 3).await;
    let second = one_id_per_shard(10..SHARDS);
    start_entities(&newest, &second, &record);
    let now = ports_of(&record);
    for id in &second {
        assert_eq!(now[id], [port(2)], "{id} started on the 1.0.1 member");
    }
    for id in &first {
        assert_eq!(now[id], placed[id], "{id} was not moved");
    }
    nodes.stop_all().await;
}

/// Waits until the coordinator, asked through `sharding`, lists `count`
/// regions.
async fn await_regions(sharding: &Sharding<Hit>, count: usize) {
    let started = Instant::now();
    loop {
        let stats = sharding
            .cluster_sharding_stats(Duration::from_secs(3))
            .await;
        if stats.is_ok_and(|s| s.regions.len() == count) {
            return;
        }
        // Each query waits for the regions' answers; one refused at once
        // (no coordinator yet) lets the runtime's other tasks run first.
        assert!(started.elapsed() < deadline(), "{count} regions registered");
        tokio::task::yield_now().await;
    }
}
