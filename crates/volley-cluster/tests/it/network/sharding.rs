//! Sharding on the network: in-process nodes on loopback, the coordinator
//! a singleton on the oldest, and every entity reporting its start, stop
//! and messages to one shared record, which checks that no entity is ever
//! alive twice and that every message arrives exactly once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use volley::{Actor, ActorSystem, Context, HandleResult, Props};
use volley_cluster::sharding::{
    ClusterSharding, Entity, EntityRef, EntityTypeKey, HashShards, Sharding, ShardingSettings,
};
use volley_cluster::{Cluster, ClusterEvent, MemberStatus};
use volley_testkit::remote::{Node, Nodes};
use volley_testkit::{await_cond_within, TestProbe};

use super::{
    all_up, deadline, expect_removed, form, oldest_index, quick, sharding_nodes, start_nodes,
};

/// One message to an entity: its sequence number from the one sender.
#[derive(Debug, Serialize, Deserialize)]
struct Seq(u32);

/// What every entity reports, whichever node it runs on.
#[derive(Default, Debug)]
struct Record {
    /// Entity id to the ports it is alive on now.
    live: BTreeMap<String, Vec<u16>>,
    /// Whether an entity was ever alive twice at once.
    twice: Vec<String>,
    /// Entity id to the ports it started on, in order.
    starts: BTreeMap<String, Vec<u16>>,
    /// Entity id to what it received, in order.
    received: BTreeMap<String, Vec<u32>>,
    /// Every start: the entity, its port, and when.
    started_at: Vec<(String, u16, Instant)>,
}

type Shared = Arc<Mutex<Record>>;

fn with<T>(record: &Shared, f: impl FnOnce(&mut Record) -> T) -> T {
    f(&mut record.lock().expect("record lock"))
}

struct Counted {
    id: String,
    port: u16,
    record: Shared,
}

impl Actor for Counted {
    type Msg = Seq;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        with(&self.record, |r| {
            let live = r.live.entry(self.id.clone()).or_default();
            live.push(self.port);
            if live.len() > 1 {
                r.twice.push(self.id.clone());
            }
            r.starts.entry(self.id.clone()).or_default().push(self.port);
            r.started_at
                .push((self.id.clone(), self.port, Instant::now()));
        });
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, Seq(n): Seq) -> HandleResult {
        with(&self.record, |r| {
            r.received.entry(self.id.clone()).or_default().push(n)
        });
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        with(&self.record, |r| {
            if let Some(live) = r.live.get_mut(&self.id) {
                live.retain(|p| *p != self.port);
            }
        });
    }
}

fn key() -> EntityTypeKey<Seq> {
    EntityTypeKey::new("counted")
}

/// The margin after a removal in these tests.
const MARGIN: Duration = Duration::from_secs(3);

/// Ten shards, rounds every 200 ms: a round moves one shard.
fn settings() -> ShardingSettings {
    ShardingSettings {
        retry_interval: Duration::from_millis(200),
        rebalance_interval: Duration::from_millis(200),
        handoff_timeout: Duration::from_secs(10),
        down_removal_margin: MARGIN,
        coordinator_state_wait: Duration::from_secs(5),
        ..ShardingSettings::default()
    }
}

fn start_sharding(node: &Node, record: &Shared) -> Sharding<Seq> {
    let (record, port) = (record.clone(), node.remoting.address().port());
    let entity = Entity::new(key(), move |id| {
        let (id, record) = (id.to_owned(), record.clone());
        Props::new(move || Counted {
            id: id.clone(),
            port,
            record: record.clone(),
        })
    })
    .with_extractor(HashShards::new(10).expect("shards"), 10)
    .with_settings(settings());
    ClusterSharding::init_on_cluster(&node.system, &node.remoting, entity).expect("sharding starts")
}

fn entities(sharding: &Sharding<Seq>, count: usize) -> Vec<EntityRef<Seq>> {
    (0..count)
        .map(|n| sharding.entity_ref(&format!("entity-{n}")).expect("an id"))
        .collect()
}

/// Waits until every entity has received `1..=sent`.
fn await_all_received(record: &Shared, count: usize, sent: u32) {
    await_cond_within(deadline(), "every message arrives", || {
        with(record, |r| {
            r.received.len() == count && r.received.values().all(|got| got.len() == sent as usize)
        })
    });
}

/// Every entity got each message once; per entity, the numbers that came
/// out of order (the sender is the coordinator's node, whose messages
/// and acknowledgements travel in order, but a region's two faces do not
/// keep order between them: design §4).
fn check_exactly_once(record: &Shared, sent: u32) -> usize {
    with(record, |r| {
        assert!(r.twice.is_empty(), "alive twice: {:?}", r.twice);
        let mut out_of_order = 0;
        for (id, got) in &r.received {
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (1..=sent).collect::<Vec<_>>(), "{id}");
            out_of_order += got.windows(2).filter(|w| w[0] > w[1]).count();
        }
        out_of_order
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_live_on_both_nodes_and_get_every_message() {
    let mut nodes = sharding_nodes::<Seq>();
    let members = start_nodes(&mut nodes, 2).await;
    let _clusters = form(&members);
    let record = Shared::default();
    let shardings: Vec<_> = members.iter().map(|n| start_sharding(n, &record)).collect();
    let count = 30;
    // Half the entities are told from each node.
    let from_first = entities(&shardings[0], count);
    let from_second = entities(&shardings[1], count);
    for n in 1..=20 {
        for (i, entity) in from_first.iter().enumerate() {
            let sender = if i % 2 == 0 { entity } else { &from_second[i] };
            sender.tell(Seq(n));
        }
    }
    await_all_received(&record, count, 20);
    let ports: std::collections::BTreeSet<u16> =
        with(&record, |r| r.starts.values().flatten().copied().collect());
    assert_eq!(ports.len(), 2, "entities on both nodes");
    assert_eq!(check_exactly_once(&record, 20), 0, "one sender, no move");
    // Pekko's GetClusterShardingStats, from either node: both regions.
    let stats = shardings[1]
        .cluster_sharding_stats(Duration::from_secs(3))
        .await;
    let stats = stats.expect("the coordinator answers");
    assert_eq!(stats.regions.len(), 2, "{stats:?}");
    assert_eq!(stats.entity_count(), count as u64);
    nodes.stop_all().await;
}

/// Whether every entity has received a number above `above`.
fn all_received_above(record: &Shared, count: usize, above: u32) -> bool {
    with(record, |r| {
        r.received.len() == count
            && r.received
                .values()
                .all(|got| got.last().is_some_and(|n| *n > above))
    })
}

/// A node that shuts down takes its region with it: the other regions
/// forget the shards it hosted, and the coordinator places them again,
/// so every entity gets messages again. (That nothing sent meanwhile is
/// lost or reordered is `network::sharding_order`'s check.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shards_of_a_node_that_leaves_are_placed_again() {
    let (mut nodes, members, clusters, probes, record, shardings) = three_sharded().await;
    let sender = oldest_index(&clusters);
    let leaver = (sender + 1) % 3;
    let count = 30;
    let refs = entities(&shardings[sender], count);
    let mut sent = 0;
    let send_round = |sent: &mut u32| {
        *sent += 1;
        refs.iter().for_each(|r| r.tell(Seq(*sent)));
    };
    let leaver_port = members[leaver].remoting.address().port();
    let hosts = || {
        with(&record, |r| {
            r.starts.values().flatten().any(|p| *p == leaver_port)
        })
    };
    // Pacing, not synchronisation: rounds until the leaver hosts entities
    // (regions that register late get shards by rebalance).
    let started = std::time::Instant::now();
    while !hosts() {
        assert!(started.elapsed() < deadline(), "the leaver hosts entities");
        send_round(&mut sent);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    await_all_received(&record, count, sent);
    let gone = clusters[leaver].self_member().clone();
    members[leaver].system.terminate().await;
    expect_removed(&probes[sender], &gone, MemberStatus::Exiting);
    let after_removal = sent;
    let started = std::time::Instant::now();
    // Pacing, not synchronisation: rounds until every entity has one.
    while !all_received_above(&record, count, after_removal) {
        assert!(
            started.elapsed() < deadline(),
            "entities of the leaver never got messages again"
        );
        send_round(&mut sent);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    nodes.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharding_on_a_system_without_a_cluster_is_a_typed_error() {
    let mut nodes = sharding_nodes::<Seq>();
    let node = start_nodes(&mut nodes, 1).await.remove(0);
    let entity = Entity::new(key(), |_id| {
        Props::new(|| Counted {
            id: String::new(),
            port: 0,
            record: Shared::default(),
        })
    });
    let refused = ClusterSharding::init_on_cluster(&node.system, &node.remoting, entity);
    assert_eq!(
        refused.err(),
        Some(volley_cluster::sharding::ShardingError::NoCluster)
    );
    nodes.stop_all().await;
}

/// Three nodes in a cluster, their event probes, and on each a region of
/// the counted type reporting to one record.
type Sharded = (
    Nodes,
    Vec<Node>,
    Vec<Cluster>,
    Vec<TestProbe<ClusterEvent>>,
    Shared,
    Vec<Sharding<Seq>>,
);

async fn three_sharded() -> Sharded {
    let mut nodes = sharding_nodes::<Seq>();
    let members = start_nodes(&mut nodes, 3).await;
    let (clusters, probes) = form(&members);
    let record = Shared::default();
    let shardings = members.iter().map(|n| start_sharding(n, &record)).collect();
    (nodes, members, clusters, probes, record, shardings)
}

/// Shuts `system` down (coordinated shutdown, as a process that is
/// told to stop) while rounds go to `refs` every millisecond.
async fn shut_down_while_sending(system: &ActorSystem, refs: &[EntityRef<Seq>], sent: &mut u32) {
    let leaving = system.clone();
    let shutdown = tokio::spawn(async move { leaving.terminate().await });
    let started = Instant::now();
    while !shutdown.is_finished() {
        assert!(started.elapsed() < deadline(), "the node shuts down");
        *sent += 1;
        refs.iter().for_each(|r| r.tell(Seq(*sent)));
        // Pacing, not synchronisation: rounds all through the shutdown.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Forms a cluster of `members` with no split-brain resolver: only
/// `Cluster::down` downs, so a silent member stays unreachable.
fn form_without_resolver(members: &[Node]) -> (Vec<Cluster>, Vec<TestProbe<ClusterEvent>>) {
    let seeds: Vec<&Node> = members.iter().collect();
    let (clusters, probes): (Vec<_>, Vec<_>) = members
        .iter()
        .map(|node| {
            let events = TestProbe::on_event_stream(&node.system);
            let mut settings = quick("test", &seeds);
            settings.split_brain_resolver.active_strategy = "off".to_owned();
            let cluster =
                Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts");
            (cluster, events)
        })
        .unzip();
    all_up(&clusters);
    (clusters, probes)
}

/// Sends rounds from `refs` every 10 ms for `span` (pacing: traffic
/// while time passes is what these tests look at).
async fn send_for(refs: &[EntityRef<Seq>], sent: &mut u32, span: Duration) {
    let started = Instant::now();
    while started.elapsed() < span {
        *sent += 1;
        refs.iter().for_each(|r| r.tell(Seq(*sent)));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The ids alive on `port` now.
fn live_on(record: &Shared, port: u16) -> Vec<String> {
    with(record, |r| {
        let on = r.live.iter().filter(|(_, ports)| ports.contains(&port));
        on.map(|(id, _)| id.clone()).collect()
    })
}

/// Issue 34's invariant through a crash or partition: a member that goes
/// silent (its remoting stops; its actors keep running, as behind a
/// partition) keeps its shards while it is only unreachable; once it is
/// downed and removed, its shards are placed again only after
/// `down_removal_margin`, by which time its side has stopped its region
/// (here by hand, a second after the removal). No entity is ever alive
/// twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_members_shards_move_only_after_its_removal_and_the_margin() {
    let mut nodes = sharding_nodes::<Seq>();
    let members = start_nodes(&mut nodes, 3).await;
    let (clusters, probes) = form_without_resolver(&members);
    let record = Shared::default();
    let shardings: Vec<_> = members.iter().map(|n| start_sharding(n, &record)).collect();
    let sender = oldest_index(&clusters);
    let victim = (sender + 1) % 3;
    let victim_port = members[victim].remoting.address().port();
    let refs = entities(&shardings[sender], 30);
    let mut sent = 0;
    let started = Instant::now();
    while live_on(&record, victim_port).is_empty() {
        assert!(started.elapsed() < deadline(), "the victim hosts entities");
        send_for(&refs, &mut sent, Duration::from_millis(10)).await;
    }
    await_all_received(&record, 30, sent);
    let hosted = live_on(&record, victim_port);

    let gone = clusters[victim].self_member().clone();
    members[victim].remoting.shutdown();
    await_cond_within(deadline(), "the victim is unreachable", || {
        let state = clusters[sender].state();
        state.unreachable.iter().any(|m| m.unique_address() == gone)
    });
    // Unreachable, not downed, for longer than the margin: its shards stay.
    send_for(&refs, &mut sent, MARGIN + Duration::from_secs(1)).await;
    let restarted = |since: Instant| {
        with(&record, |r| {
            let moved = r.started_at.iter().filter(|(id, port, at)| {
                *port != victim_port && *at >= since && hosted.contains(id)
            });
            moved.map(|(_, _, at)| *at).min()
        })
    };
    assert_eq!(restarted(started), None, "moved while only unreachable");

    // Akka's `Cluster.down(address)`: by address alone.
    clusters[sender]
        .down_address(members[victim].remoting.address())
        .expect("the cluster runs");
    expect_removed(&probes[sender], &gone, MemberStatus::Down);
    let removed_at = Instant::now();
    // The removed side stops its region a second later (its own resolver
    // would); until then its entities are alive.
    send_for(&refs, &mut sent, Duration::from_secs(1)).await;
    members[victim].system.stop(shardings[victim].region());
    await_cond_within(deadline(), "the victim's entities stop", || {
        live_on(&record, victim_port).is_empty()
    });
    let above = sent;
    while !all_received_above(&record, 30, above) {
        assert!(removed_at.elapsed() < deadline(), "the shards move");
        send_for(&refs, &mut sent, Duration::from_millis(10)).await;
    }
    with(&record, |r| {
        assert!(r.twice.is_empty(), "alive twice: {:?}", r.twice)
    });
    let first_move = restarted(removed_at).expect("the victim's entities started elsewhere");
    // Less a little: the coordinator saw the removal before this test did.
    let earliest = removed_at + MARGIN - Duration::from_millis(300);
    assert!(
        first_move >= earliest,
        "moved {:?} after the removal",
        first_move - removed_at
    );
    nodes.stop_all().await;
}

/// Design §3: the coordinator's node shuts down with traffic running from
/// another node. The singleton moves; the new coordinator asks every
/// region for the shards it hosts before it allocates, so no shard gets a
/// second home (no entity alive twice), and every entity gets messages
/// again, those of the departed node's shards too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_moves_with_its_node_and_rebuilds_its_map_from_the_regions() {
    let (mut nodes, members, clusters, probes, record, shardings) = three_sharded().await;
    let oldest = oldest_index(&clusters);
    let sender = (oldest + 1) % 3;
    let refs = entities(&shardings[sender], 30);
    let mut sent = 0;
    let ports: Vec<u16> = members
        .iter()
        .map(|m| m.remoting.address().port())
        .collect();
    let started = Instant::now();
    while !ports.iter().all(|p| !live_on(&record, *p).is_empty()) {
        assert!(started.elapsed() < deadline(), "every node hosts entities");
        send_for(&refs, &mut sent, Duration::from_millis(10)).await;
    }

    let gone = clusters[oldest].self_member().clone();
    shut_down_while_sending(&members[oldest].system, &refs, &mut sent).await;
    expect_removed(&probes[sender], &gone, MemberStatus::Exiting);
    // From now on the third node sends too: its region knows no home yet,
    // so it asks the new coordinator for shards that live elsewhere.
    let third = 3 - oldest - sender;
    let both: Vec<EntityRef<Seq>> = refs
        .iter()
        .cloned()
        .chain(entities(&shardings[third], 30))
        .collect();
    let above = sent;
    let moved_at = Instant::now();
    while !all_received_above(&record, 30, above) {
        assert!(
            moved_at.elapsed() < deadline(),
            "every entity gets messages again"
        );
        send_for(&both, &mut sent, Duration::from_millis(10)).await;
    }
    with(&record, |r| {
        assert!(r.twice.is_empty(), "alive twice: {:?}", r.twice)
    });
    nodes.stop_all().await;
}

/// Leaves through `Cluster::leave` (which runs coordinated shutdown,
/// reason `ClusterLeaving`) while rounds go to `refs` every millisecond,
/// until the leaver's system has terminated.
async fn leave_while_sending(
    cluster: &Cluster,
    system: &ActorSystem,
    refs: &[EntityRef<Seq>],
    sent: &mut u32,
) {
    cluster.leave().expect("the cluster runs");
    let leaving = system.clone();
    let terminated = tokio::spawn(async move { leaving.when_terminated().await });
    let started = Instant::now();
    while !terminated.is_finished() {
        assert!(started.elapsed() < deadline(), "the leaver terminates");
        *sent += 1;
        refs.iter().for_each(|r| r.tell(Seq(*sent)));
        // Pacing, not synchronisation: rounds all through the leave.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Graceful leave of the coordinator's own node (`Cluster::leave`), with
/// another node sending all through it: the region hands its shards off
/// in `cluster-sharding-shutdown-region` while the coordinator still runs
/// there, the coordinator's singleton hands over in `cluster-exiting`,
/// and the node is removed only after it confirmed: every message arrives
/// exactly once, no entity alive twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinators_node_leaves_gracefully_and_loses_no_message() {
    let (mut nodes, members, clusters, probes, record, shardings) = three_sharded().await;
    let leaver = oldest_index(&clusters);
    let sender = (leaver + 1) % 3;
    let leaver_port = members[leaver].remoting.address().port();
    let refs = entities(&shardings[sender], 30);
    let mut sent = 0;
    let started = Instant::now();
    while live_on(&record, leaver_port).is_empty() {
        assert!(started.elapsed() < deadline(), "the leaver hosts entities");
        send_for(&refs, &mut sent, Duration::from_millis(10)).await;
    }

    let gone = clusters[leaver].self_member().clone();
    leave_while_sending(&clusters[leaver], &members[leaver].system, &refs, &mut sent).await;
    expect_removed(&probes[sender], &gone, MemberStatus::Exiting);
    assert_eq!(
        members[leaver].system.coordinated_shutdown().reason(),
        Some(volley::ShutdownReason::ClusterLeaving)
    );
    send_for(&refs, &mut sent, Duration::from_millis(100)).await;
    await_all_received(&record, 30, sent);
    let out_of_order = check_exactly_once(&record, sent);
    eprintln!("{sent} rounds to 30 entities; {out_of_order} out of order through the leave");
    assert!(live_on(&record, leaver_port).is_empty());
    nodes.stop_all().await;
}
