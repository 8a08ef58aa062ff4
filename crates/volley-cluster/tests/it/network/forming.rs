//! Nodes form a cluster through their seed nodes.

use volley_cluster::{ClusterEvent, MemberStatus};
use volley_testkit::FishingOutcome;

use super::{deadline, formed, nodes};

/// Two nodes join through seeds; both see both Up, with one leader, and
/// each published the other's `MemberUp` on its event stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_form_a_cluster_through_seeds() {
    let mut nodes = nodes();
    let (_members, clusters, probes) = formed(&mut nodes, 2).await;
    for (probe, other) in probes.iter().zip(clusters.iter().rev()) {
        let other = other.self_member().clone();
        probe.fish_for_within(deadline(), |event| match event {
            ClusterEvent::MemberUp { member } if member.unique_address() == other => {
                FishingOutcome::Complete
            }
            _ => FishingOutcome::Continue,
        });
    }
    nodes.stop_all().await;
}

/// Three nodes join through seeds: every node sees all three Up, one
/// leader, and gave each member its up-number once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_form_a_cluster_with_one_leader() {
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
