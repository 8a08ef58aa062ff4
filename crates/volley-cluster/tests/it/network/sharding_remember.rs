//! Remembered entities on a cluster of in-process nodes on loopback
//! (after Pekko's `ClusterShardingRememberEntitiesSpec`): the entities of
//! a node that leaves start on the other node with no message sent to
//! them; those of a node that crashed start again when it comes back
//! with its file, though their shards started elsewhere meanwhile; and a
//! two-node cluster stopped and started again in full starts every
//! entity from its node's redb file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use volley::{Actor, Context, HandleResult, Props};
use volley_cluster::sharding::store::{MemoryStore, RedbStore, StoreLocation};
use volley_cluster::sharding::{
    ClusterSharding, Entity, EntityTypeKey, HashShards, Sharding, ShardingSettings,
};
use volley_cluster::{Cluster, MemberStatus};
use volley_testkit::remote::Node;
use volley_testkit::{await_cond_within, dilated, TestProbe};

use super::{
    all_up, deadline, expect_removed, form, oldest_index, quick, sharding_nodes, start_nodes,
};

#[derive(Debug, Serialize, Deserialize)]
struct Ping(u32);

/// Entity id to the ports it is alive on now, and every id ever alive
/// twice at once.
#[derive(Default)]
struct Live {
    on: BTreeMap<String, Vec<u16>>,
    twice: Vec<String>,
}

type Shared = Arc<Mutex<Live>>;

fn with<T>(live: &Shared, f: impl FnOnce(&mut Live) -> T) -> T {
    f(&mut live.lock().expect("live lock"))
}

struct Remembered {
    id: String,
    port: u16,
    live: Shared,
}

impl Actor for Remembered {
    type Msg = Ping;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        with(&self.live, |l| {
            let on = l.on.entry(self.id.clone()).or_default();
            on.push(self.port);
            if on.len() > 1 {
                l.twice.push(self.id.clone());
            }
        });
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: Ping) -> HandleResult {
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        with(&self.live, |l| {
            if let Some(on) = l.on.get_mut(&self.id) {
                on.retain(|p| *p != self.port);
            }
        });
    }
}

/// No rebalance rounds: a new coordinator allocates nothing until both
/// regions registered, so shards spread over both from the start, and no
/// round moves one while a test looks.
fn settings(store: StoreLocation) -> ShardingSettings {
    ShardingSettings {
        retry_interval: Duration::from_millis(200),
        rebalance_interval: Duration::from_secs(3600),
        handoff_timeout: Duration::from_secs(10),
        down_removal_margin: Duration::from_millis(200),
        coordinator_state_wait: Duration::from_secs(5),
        remember_entities: true,
        remember_store: Some(store),
        ..ShardingSettings::default()
    }
}

fn start_sharding(node: &Node, live: &Shared, store: StoreLocation) -> Sharding<Ping> {
    let (live, port) = (live.clone(), node.remoting.address().port());
    let entity = Entity::new(EntityTypeKey::new("remembered"), move |id| {
        let (id, live) = (id.to_owned(), live.clone());
        Props::new(move || Remembered {
            id: id.clone(),
            port,
            live: live.clone(),
        })
    })
    .with_extractor(HashShards::new(10).expect("shards"), 10)
    .with_settings(settings(store));
    ClusterSharding::init_on_cluster(&node.system, &node.remoting, entity).expect("sharding starts")
}

const IDS: usize = 20;

fn ids() -> Vec<String> {
    (0..IDS).map(|n| format!("entity-{n}")).collect()
}

/// The ids alive on `port` now.
fn live_on(live: &Shared, port: u16) -> BTreeSet<String> {
    with(live, |l| {
        let on = l.on.iter().filter(|(_, ports)| ports.contains(&port));
        on.map(|(id, _)| id.clone()).collect()
    })
}

/// Starts every entity with one message, and waits until all run and
/// both nodes host some.
fn start_all_on_both(sharding: &Sharding<Ping>, live: &Shared, ports: [u16; 2]) {
    for id in ids() {
        sharding.entity_ref(&id).expect("an id").tell(Ping(1));
    }
    await_cond_within(deadline(), "every entity runs, on both nodes", || {
        let (first, second) = (live_on(live, ports[0]), live_on(live, ports[1]));
        first.len() + second.len() == IDS && !first.is_empty() && !second.is_empty()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_entities_of_a_node_that_leaves_start_on_the_other_without_a_message() {
    let mut nodes = sharding_nodes::<Ping>();
    let members = start_nodes(&mut nodes, 2).await;
    let (clusters, _probes) = form(&members);
    let live = Shared::default();
    let shardings: Vec<_> = members
        .iter()
        .map(|n| {
            start_sharding(
                n,
                &live,
                StoreLocation::Instance(Arc::new(MemoryStore::new())),
            )
        })
        .collect();
    let stays = oldest_index(&clusters);
    let leaver = 1 - stays;
    let ports = [0, 1].map(|i| members[i].remoting.address().port());
    start_all_on_both(&shardings[stays], &live, ports);
    let moving = live_on(&live, ports[leaver]);

    clusters[leaver].leave().expect("the cluster runs");
    members[leaver].system.when_terminated().await;
    // Nothing is sent to them: their shards' hand-off carried their ids.
    assert!(!moving.is_empty());
    await_cond_within(
        deadline(),
        "the leaver's entities run on the other node",
        || live_on(&live, ports[stays]).len() == IDS,
    );
    with(&live, |l| {
        assert!(l.twice.is_empty(), "alive twice: {:?}", l.twice)
    });
    nodes.stop_all().await;
}

/// Waits until no actor of the stopped nodes holds the file.
fn await_released(path: &Path) {
    await_cond_within(
        dilated(Duration::from_secs(10)),
        "the file is released",
        || RedbStore::open(path).is_ok(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_node_cluster_restarted_in_full_starts_every_entity_from_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("node-{i}.redb")))
        .collect();
    let before = {
        let mut nodes = sharding_nodes::<Ping>();
        let members = start_nodes(&mut nodes, 2).await;
        let (clusters, _probes) = form(&members);
        let live = Shared::default();
        let shardings: Vec<_> = (0..2)
            .map(|i| start_sharding(&members[i], &live, StoreLocation::File(files[i].clone())))
            .collect();
        let ports = [0, 1].map(|i| members[i].remoting.address().port());
        start_all_on_both(&shardings[oldest_index(&clusters)], &live, ports);
        let before = ports.map(|port| live_on(&live, port));
        // As a crash of both: remoting goes first, so no region hands
        // anything off.
        nodes.stop_all().await;
        before
    };
    files.iter().for_each(|f| await_released(f));

    // New nodes (new ports), each with the file of one of the old ones;
    // no message is sent to any entity.
    let mut nodes = sharding_nodes::<Ping>();
    let members = start_nodes(&mut nodes, 2).await;
    let _clusters = form(&members);
    let live = Shared::default();
    let _shardings: Vec<_> = (0..2)
        .map(|i| start_sharding(&members[i], &live, StoreLocation::File(files[i].clone())))
        .collect();
    let ports = [0, 1].map(|i| members[i].remoting.address().port());
    await_cond_within(
        deadline(),
        "every entity runs again where its file is",
        || {
            [0, 1]
                .iter()
                .all(|&i| live_on(&live, ports[i]) == before[i])
        },
    );
    with(&live, |l| {
        assert!(l.twice.is_empty(), "alive twice: {:?}", l.twice)
    });
    nodes.stop_all().await;
}

/// One new id in each shard of `ids`.
fn newcomers_in_shards_of(sharding: &Sharding<Ping>, ids: &BTreeSet<String>) -> BTreeSet<String> {
    let shard_of = |id: &str| sharding.entity_ref(id).expect("an id").shard();
    let shards: BTreeSet<_> = ids.iter().map(|id| shard_of(id)).collect();
    let mut found = BTreeMap::new();
    for id in (0..).map(|n| format!("newcomer-{n}")) {
        if found.len() == shards.len() {
            break;
        }
        let shard = shard_of(&id);
        if shards.contains(&shard) {
            found.entry(shard).or_insert(id);
        }
    }
    found.into_values().collect()
}

/// A member of a cluster with no split-brain resolver (only
/// `Cluster::down` downs), joining through `seeds`.
fn join_without_resolver(node: &Node, seeds: &[&Node]) -> Cluster {
    let mut settings = quick("test", seeds);
    settings.split_brain_resolver.active_strategy = "off".to_owned();
    Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts")
}

/// A node crashes (its remoting first, so nothing is handed off) and is
/// downed; its shards start on the other node once freed, empty, since
/// their ids are in its file. When it comes back (a new node, with that
/// file) its region names those shards, and the coordinator has it hand
/// their ids to where they run: they start there, with no message sent
/// to them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_node_back_with_its_file_has_its_entities_started_where_their_shards_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("victim.redb");
    let mut nodes = sharding_nodes::<Ping>();
    let members = start_nodes(&mut nodes, 2).await;
    let seeds: Vec<&Node> = members.iter().collect();
    let clusters: Vec<Cluster> = members
        .iter()
        .map(|n| join_without_resolver(n, &seeds))
        .collect();
    all_up(&clusters);
    let (stays, victim) = match oldest_index(&clusters) {
        0 => (0, 1),
        _ => (1, 0),
    };
    let events = TestProbe::on_event_stream(&members[stays].system);
    let live = Shared::default();
    let in_memory = StoreLocation::Instance(Arc::new(MemoryStore::new()));
    let sharding = start_sharding(&members[stays], &live, in_memory);
    let _victims = start_sharding(&members[victim], &live, StoreLocation::File(file.clone()));
    let ports = [stays, victim].map(|i| members[i].remoting.address().port());
    start_all_on_both(&sharding, &live, ports);
    let crashed = live_on(&live, ports[1]);

    let gone = clusters[victim].self_member().clone();
    members[victim].remoting.shutdown();
    members[victim].system.terminate().await;
    clusters[stays]
        .down(gone.clone())
        .expect("the cluster runs");
    expect_removed(&events, &gone, MemberStatus::Down);
    // Once the margin is over the crashed node's shards start on the
    // other node: seen through a new entity in each, which is all the
    // traffic they get.
    let newcomers = newcomers_in_shards_of(&sharding, &crashed);
    for id in &newcomers {
        sharding.entity_ref(id).expect("an id").tell(Ping(1));
    }
    await_cond_within(deadline(), "the crashed node's shards run again", || {
        newcomers.is_subset(&live_on(&live, ports[0]))
    });
    let on_stayer = live_on(&live, ports[0]);
    assert!(
        crashed.is_disjoint(&on_stayer),
        "their ids are in its file only"
    );
    await_released(&file);

    let back = nodes
        .start_with(super::SYSTEM, Default::default(), Default::default())
        .await;
    let cluster = join_without_resolver(&back, &[&members[stays]]);
    all_up(&[clusters[stays].clone(), cluster]);
    let _back = start_sharding(&back, &live, StoreLocation::File(file.clone()));
    // The node that came back hands its ids to where the shards run.
    await_cond_within(deadline(), "the crashed node's entities run again", || {
        crashed.is_subset(&live_on(&live, ports[0]))
    });
    with(&live, |l| {
        assert!(l.twice.is_empty(), "alive twice: {:?}", l.twice)
    });
    nodes.stop_all().await;
}
