//! Nodes form a cluster through their seed nodes.

use volley::Settings;
use volley_cluster::{register_settings, Cluster, ClusterEvent, MemberStatus};
use volley_remote::RemoteSettings;
use volley_testkit::{FishingOutcome, TestProbe};

use super::{await_all_up, deadline, formed, nodes, SYSTEM};

/// The `[cluster]` section of the tests' quick timings, no seed nodes.
const QUICK_SECTION: &str = "[cluster]\nname = \"test\"\ngossip_interval = \"100ms\"\n\
    leader_actions_interval = \"100ms\"\nseed_node_timeout = \"500ms\"\n\
    retry_unsuccessful_join_after = \"500ms\"\n\
    [cluster.swim]\nprobe_period = \"300ms\"\nprobe_rtt = \"150ms\"\n\
    suspect_to_down_after = \"5s\"\n";

/// Two nodes started from their systems' `[cluster]` settings: the first
/// joins through itself as the only seed (it forms the cluster), the
/// second joins through it; both see both Up with one leader, and each
/// published the other's `MemberUp` on its event stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_form_a_cluster_from_their_settings() {
    register_settings();
    let mut nodes = nodes();
    let settings = Settings::from_toml_str(QUICK_SECTION).expect("valid settings");
    let mut members = Vec::new();
    for _ in 0..2 {
        let node = nodes
            .start_with(SYSTEM, settings.clone(), RemoteSettings::default())
            .await;
        let events = TestProbe::<ClusterEvent>::on_event_stream(&node.system);
        let cluster =
            Cluster::start_from_settings(&node.system, &node.remoting).expect("a cluster starts");
        members.push((node, cluster, events));
    }
    let first = members[0].0.remoting.address().clone();
    members[0]
        .1
        .join_seed_nodes(std::slice::from_ref(&first))
        .unwrap();
    members[1].1.join(&first).unwrap();
    let clusters: Vec<&Cluster> = members.iter().map(|(_, c, _)| c).collect();
    let addresses: Vec<_> = clusters.iter().map(|c| c.self_member().clone()).collect();
    await_all_up(&clusters, &addresses);
    for ((_, _, probe), other) in members.iter().zip(addresses.iter().rev()) {
        probe.fish_for_within(deadline(), |event| match event {
            ClusterEvent::MemberUp { member } if member.unique_address() == *other => {
                FishingOutcome::Complete
            }
            _ => FishingOutcome::Continue,
        });
    }
    nodes.stop_all().await;
}

/// Three nodes join through seeds: every node sees all three Up, one
/// leader, each member with its own up-number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_form_a_cluster_through_seeds_with_one_leader() {
    let mut nodes = nodes();
    let (_members, clusters, _probes) = formed(&mut nodes, 3).await;
    let state = clusters[0].state();
    let mut up_numbers: Vec<u32> = state
        .members
        .iter()
        .filter(|m| m.status == MemberStatus::Up)
        .map(|m| m.up_number)
        .collect();
    up_numbers.sort_unstable();
    up_numbers.dedup();
    assert_eq!(up_numbers.len(), 3, "{state:?}");
    assert_eq!(clusters[0].refused_inputs(), 0);
    nodes.stop_all().await;
}
