//! The cluster on the network (design §8 step 7): in-process nodes on
//! loopback, each with its remoting and its `Cluster`, short timings so
//! that each test takes a few seconds. Every wait has a deadline; none
//! sleeps.

mod bad_packets;
mod callbacks;
mod downing;
mod formations;
mod forming;
mod get;
mod leaving;
mod metrics;
mod receptionist;
mod refusing;
mod sharding;
mod sharding_order;
mod sharding_remember;
mod sharding_roles;
mod sharding_versions;
mod shutdown;
mod singleton;
mod subscribe;
mod topics;
mod weakly_up;

use std::time::Duration;

use volley::Settings;
use volley_cluster::{Cluster, ClusterEvent, ClusterSettings, MemberStatus, UniqueAddress};
use volley_remote::{Registry, RemoteSettings};
use volley_testkit::remote::{Node, Nodes};
use volley_testkit::{await_cond_within, dilated, FishingOutcome, TestProbe};

/// The system name every member shares (an address names its system).
pub const SYSTEM: &str = "cluster";

/// The longest any one step may take, on a loaded machine.
pub fn deadline() -> Duration {
    dilated(Duration::from_secs(20))
}

/// The resolver's wait in these tests: short, since detection itself
/// takes `suspect_to_down_after` (5 s).
pub const STABLE_AFTER: Duration = Duration::from_secs(1);

/// Nodes whose registry knows the one message the tests send.
pub fn nodes() -> Nodes {
    Nodes::new(|| {
        let mut registry = Registry::default();
        registry.register::<u32>(1).expect("a fresh registry");
        registry
    })
}

/// Nodes for sharding tests: the singleton's and sharding's protocols, and
/// the envelope of the entities' message type `M` (id 62).
pub fn sharding_nodes<M>() -> Nodes
where
    M: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
{
    Nodes::new(|| {
        let mut registry = Registry::default();
        registry.register::<u32>(1).expect("a fresh registry");
        volley_cluster::singleton::register_singleton_types(&mut registry, 50).expect("free ids");
        volley_cluster::sharding::register_sharding_types(&mut registry, 60).expect("free ids");
        registry
            .register::<volley_cluster::sharding::ShardEnvelope<M>>(62)
            .expect("a free id");
        registry
    })
}

/// Timings a few times faster than the defaults, yet patient enough
/// that a loaded machine does not see false suspicions.
pub fn quick(name: &str, seeds: &[&Node]) -> ClusterSettings {
    let seeds = seeds.iter().map(|n| n.remoting.address().to_string());
    quick_with_seeds(name, seeds.collect())
}

/// [`quick`] with the seed nodes' addresses (the process cases' too).
pub fn quick_with_seeds(name: &str, seed_nodes: Vec<String>) -> ClusterSettings {
    let mut settings = ClusterSettings {
        name: name.to_owned(),
        seed_nodes,
        gossip_interval: Duration::from_millis(100),
        leader_actions_interval: Duration::from_millis(100),
        seed_node_timeout: Duration::from_millis(500),
        retry_unsuccessful_join_after: Duration::from_millis(500),
        ..ClusterSettings::default()
    };
    settings.swim.probe_period = Duration::from_millis(300);
    settings.swim.probe_rtt = Duration::from_millis(150);
    settings.swim.suspect_to_down_after = Some(Duration::from_secs(5));
    settings.split_brain_resolver.stable_after = Some(STABLE_AFTER);
    settings
}

/// `count` nodes on loopback, not yet in a cluster.
pub async fn start_nodes(nodes: &mut Nodes, count: usize) -> Vec<Node> {
    let mut started = Vec::new();
    for _ in 0..count {
        let node = nodes
            .start_with(SYSTEM, Settings::default(), RemoteSettings::default())
            .await;
        started.push(node);
    }
    started
}

/// One `Cluster` per node, every one joining through all of them as seed
/// nodes (the first forms the cluster), with a probe of its events.
pub fn start_clusters(members: &[Node]) -> Vec<(Cluster, TestProbe<ClusterEvent>)> {
    let seeds: Vec<&Node> = members.iter().collect();
    members
        .iter()
        .map(|node| {
            let events = TestProbe::on_event_stream(&node.system);
            let cluster = Cluster::start(&node.system, &node.remoting, quick("test", &seeds))
                .expect("a cluster starts");
            (cluster, events)
        })
        .collect()
}

/// Waits until every cluster sees exactly `members` Up, none
/// unreachable, and all agree on one leader among them.
pub fn await_all_up(clusters: &[&Cluster], members: &[UniqueAddress]) {
    let mut expected = members.to_vec();
    expected.sort();
    await_cond_within(
        deadline(),
        "every node sees every member Up, one leader",
        || {
            let states: Vec<_> = clusters.iter().map(|c| c.state()).collect();
            let leaders: Vec<_> = states.iter().map(|s| s.leader.clone()).collect();
            states.iter().all(|s| {
                let up: Vec<_> = s
                    .members
                    .iter()
                    .filter(|m| m.status == MemberStatus::Up)
                    .map(|m| m.unique_address())
                    .collect();
                up == expected && s.members.len() == expected.len() && s.unreachable.is_empty()
            }) && leaders.windows(2).all(|w| w[0] == w[1])
                && leaders[0].as_ref().is_some_and(|l| expected.contains(l))
        },
    );
}

/// Waits until every one of `clusters` sees all of them Up.
pub fn all_up(clusters: &[Cluster]) {
    let addresses: Vec<_> = clusters.iter().map(|c| c.self_member().clone()).collect();
    await_all_up(&clusters.iter().collect::<Vec<_>>(), &addresses);
}

/// Forms a cluster of `members` and waits until all are Up.
pub fn form(members: &[Node]) -> (Vec<Cluster>, Vec<TestProbe<ClusterEvent>>) {
    let (clusters, probes): (Vec<_>, Vec<_>) = start_clusters(members).into_iter().unzip();
    all_up(&clusters);
    (clusters, probes)
}

/// Forms a cluster of `count` new nodes and waits until all are Up.
pub async fn formed(
    nodes: &mut Nodes,
    count: usize,
) -> (Vec<Node>, Vec<Cluster>, Vec<TestProbe<ClusterEvent>>) {
    let members = start_nodes(nodes, count).await;
    let (clusters, probes) = form(&members);
    (members, clusters, probes)
}

/// Waits until `probe` sees the member `gone` Removed, and checks the
/// status it was removed from.
pub fn expect_removed(probe: &TestProbe<ClusterEvent>, gone: &UniqueAddress, from: MemberStatus) {
    probe.fish_for_within(deadline(), |event| match event {
        ClusterEvent::MemberRemoved {
            member,
            previous_status,
        } if member.unique_address() == *gone => {
            assert_eq!(*previous_status, from, "{gone} removed from");
            FishingOutcome::Complete
        }
        _ => FishingOutcome::Continue,
    });
}

/// The index of the oldest member (the first Up: the singleton's and the
/// sharding coordinator's node), as the first cluster sees it.
pub fn oldest_index(clusters: &[Cluster]) -> usize {
    let state = clusters[0].state();
    let oldest = state
        .members
        .iter()
        .min_by_key(|m| (m.up_number, m.unique_address()))
        .expect("members")
        .unique_address();
    clusters
        .iter()
        .position(|c| *c.self_member() == oldest)
        .expect("a member")
}
