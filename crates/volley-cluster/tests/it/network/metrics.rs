//! The cluster's metrics (`[metrics] enabled`): members by status,
//! unreachable members, gossip bytes both ways and the split-brain
//! resolver's decisions, read back from a recorder installed for this
//! binary.

use std::time::Duration;

use volley::{MetricsSettings, Settings};
use volley_cluster::{Cluster, ClusterSettings};
use volley_remote::RemoteSettings;
use volley_testkit::remote::Node;
use volley_testkit::{await_cond_within, RecordedMetrics};

use super::{await_all_up, deadline, nodes, quick, SYSTEM};

/// This node's labels, before the one a metric adds, in key order.
fn labels(node: &Node, extra: Option<(&str, &str)>) -> String {
    let mut all = vec![
        format!("node={}", node.remoting.address()),
        format!("system={SYSTEM}"),
    ];
    if let Some((key, value)) = extra {
        all.push(format!("{key}={value}"));
    }
    all.sort();
    all.join(",")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_unreachable_bytes_and_decisions_are_recorded() {
    let recorded = RecordedMetrics::install();
    let mut nodes = nodes();
    let metered = Settings {
        metrics: MetricsSettings {
            enabled: true,
            sample_interval: Duration::from_millis(20),
        },
        ..Settings::default()
    };
    let mut members = Vec::new();
    for _ in 0..3 {
        let node = nodes
            .start_with(SYSTEM, metered.clone(), RemoteSettings::default())
            .await;
        members.push(node);
    }
    let seeds: Vec<&Node> = members.iter().collect();
    let settings: ClusterSettings = quick("test", &seeds);
    let clusters: Vec<Cluster> = members
        .iter()
        .map(|n| Cluster::start(&n.system, &n.remoting, settings.clone()).expect("started"))
        .collect();
    let addresses: Vec<_> = clusters.iter().map(|c| c.self_member().clone()).collect();
    await_all_up(&clusters.iter().collect::<Vec<_>>(), &addresses);
    let gauge = |node: &Node, name: &str, extra| recorded.gauge(name, &labels(node, extra));
    let counter = |node: &Node, name: &str, extra| recorded.counter(name, &labels(node, extra));
    await_cond_within(
        deadline(),
        "three Up, none unreachable, bytes both ways",
        || {
            members.iter().all(|n| {
                gauge(n, "volley_cluster_members", Some(("status", "up"))) == Some(3.0)
                    && gauge(n, "volley_cluster_unreachable_members", None) == Some(0.0)
                    && counter(n, "volley_cluster_gossip_bytes_out_total", None)
                        .is_some_and(|b| b > 0)
                    && counter(n, "volley_cluster_gossip_bytes_in_total", None)
                        .is_some_and(|b| b > 0)
            })
        },
    );
    assert!(clusters[0].gossip_bytes_sent() > 0 && clusters[0].gossip_bytes_received() > 0);

    let leader_index = addresses
        .iter()
        .position(|a| Some(a) == clusters[0].state().leader.as_ref())
        .expect("a leader");
    let silent = (leader_index + 1) % 3;
    members[silent].remoting.shutdown();
    let leader = &members[leader_index];
    await_cond_within(
        deadline(),
        "the silent member unreachable on the leader",
        || gauge(leader, "volley_cluster_unreachable_members", None) == Some(1.0),
    );
    let decisions = |n: &Node| {
        counter(
            n,
            "volley_cluster_sbr_decisions_total",
            Some(("decision", "down_unreachable")),
        )
    };
    await_cond_within(
        deadline(),
        "the leader's decision counted, the member gone",
        || {
            decisions(leader) == Some(1)
                && gauge(leader, "volley_cluster_members", Some(("status", "up"))) == Some(2.0)
                && gauge(leader, "volley_cluster_unreachable_members", None) == Some(0.0)
        },
    );
    // Downed and removed, not an Exiting member removed unconfirmed.
    assert_eq!(
        counter(leader, "volley_cluster_exiting_timeouts_total", None),
        Some(0)
    );
    assert_eq!(clusters[leader_index].sbr_decisions(), 1);
    let other = (leader_index + 2) % 3;
    assert_eq!(
        decisions(&members[other]),
        Some(0),
        "only the leader decides"
    );
    nodes.stop_all().await;
}
