//! Two clusters of one name formed apart on one machine, then made to
//! reach each other: they stay apart (Akka ignores gossip from a node that
//! is not a member), and what each refused is counted.

use std::collections::BTreeSet;
use std::time::Duration;

use volley::{MetricsSettings, Settings};
use volley_cluster::{Cluster, MemberStatus, UniqueAddress};
use volley_remote::RemoteSettings;
use volley_testkit::{await_cond_within, RecordedMetrics};

use super::{deadline, formed, nodes, quick, SYSTEM};
use crate::log_capture;

/// The members `cluster` holds, all of which must be Up.
fn up_members(cluster: &Cluster) -> Option<BTreeSet<UniqueAddress>> {
    let state = cluster.state();
    let all_up = state.members.iter().all(|m| m.status == MemberStatus::Up);
    all_up.then(|| state.members.iter().map(|m| m.unique_address()).collect())
}

/// Clusters A and B form apart (each through its own seed nodes). A
/// bridge node then joins through one seed of each: both answer it, so
/// each side's SWIM hears of the other's bridge and probes it. Without
/// formations the bridge's tables and SWIM view would fuse A and B into
/// one cluster; with them the bridge joins whichever answered first and
/// refuses the other, which keeps probing it, so the refusals are counted
/// (the accessor and `volley_cluster_packets_refused_total`) and logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_formed_apart_stay_apart_when_they_reach_each_other() {
    log_capture::install_at(tracing::Level::INFO);
    let recorded = RecordedMetrics::install();
    let mut nodes = nodes();
    let (a_nodes, a, _a_events) = formed(&mut nodes, 2).await;
    let (b_nodes, b, _b_events) = formed(&mut nodes, 2).await;
    let formations = [a[0].formation(), b[0].formation()];
    assert!(formations.iter().all(Option::is_some));
    assert_ne!(formations[0], formations[1], "formed apart");
    assert_eq!(a[1].formation(), formations[0]);
    assert_eq!(b[1].formation(), formations[1]);

    let metered = Settings {
        metrics: MetricsSettings {
            enabled: true,
            sample_interval: Duration::from_millis(20),
        },
        ..Settings::default()
    };
    let bridge_node = nodes
        .start_with(SYSTEM, metered, RemoteSettings::default())
        .await;
    let bridge = Cluster::start(
        &bridge_node.system,
        &bridge_node.remoting,
        quick("test", &[&a_nodes[0], &b_nodes[0]]),
    )
    .expect("a cluster starts");
    let me = bridge.self_member().clone();
    let a_members: BTreeSet<_> = a.iter().map(|c| c.self_member().clone()).collect();
    let b_members: BTreeSet<_> = b.iter().map(|c| c.self_member().clone()).collect();
    let with_bridge = |side: &BTreeSet<UniqueAddress>| {
        let mut side = side.clone();
        side.insert(me.clone());
        side
    };
    // The bridge is Up in one cluster, whose every member sees it.
    await_cond_within(deadline(), "the bridge Up in one of the two", || {
        let joined = [(&a, &a_members), (&b, &b_members)]
            .into_iter()
            .find(|(clusters, _)| clusters.iter().any(|c| c.formation() == bridge.formation()));
        joined.is_some_and(|(clusters, members)| {
            let expected = with_bridge(members);
            clusters
                .iter()
                .chain(std::iter::once(&bridge))
                .all(|c| up_members(c).as_ref() == Some(&expected))
        })
    });
    // The other cluster keeps probing the bridge, which refuses it.
    let series = format!(
        "node={},reason=other_formation,system={SYSTEM}",
        bridge_node.remoting.address()
    );
    await_cond_within(deadline(), "refusals counted, as a metric too", || {
        bridge.refused_other_formation() >= 3
            && recorded
                .counter("volley_cluster_packets_refused_total", &series)
                .is_some_and(|n| n >= 3)
    });
    assert!(!log_capture::lines_with("another formation of this cluster").is_empty());
    assert_eq!(bridge.refused_bad_envelope(), 0);

    let in_a = bridge.formation() == formations[0];
    let (ours, theirs) = if in_a {
        ((&a, with_bridge(&a_members)), (&b, b_members.clone()))
    } else {
        ((&b, with_bridge(&b_members)), (&a, a_members.clone()))
    };
    for cluster in ours.0.iter().chain(std::iter::once(&bridge)) {
        assert_eq!(up_members(cluster), Some(ours.1.clone()));
    }
    for cluster in theirs.0 {
        assert_eq!(up_members(cluster), Some(theirs.1.clone()), "apart");
        assert_ne!(cluster.formation(), bridge.formation());
    }
    nodes.stop_all().await;
}
