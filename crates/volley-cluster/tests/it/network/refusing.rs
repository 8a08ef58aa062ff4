//! A node of another cluster, or with another shared secret, is refused.

use volley::Settings;
use volley_cluster::{Cluster, ClusterError};
use volley_remote::RemoteSettings;
use volley_testkit::{await_cond_within, dilated};

use super::{deadline, form, formed, nodes, quick, start_nodes, SYSTEM};

/// A node whose `[cluster] name` differs joins through a member: the
/// member refuses its frames (counted as foreign) and the cluster never
/// holds it; the node stays out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_of_another_cluster_is_refused() {
    crate::log_capture::install_at(tracing::Level::INFO);
    let mut nodes = nodes();
    let (members, clusters, _probes) = formed(&mut nodes, 2).await;
    let stranger = start_nodes(&mut nodes, 1).await.remove(0);
    let foreign = Cluster::start(
        &stranger.system,
        &stranger.remoting,
        quick("other", &[&members[0]]),
    )
    .expect("a cluster starts");
    await_cond_within(deadline(), "the member refused a foreign frame", || {
        members[0]
            .remoting
            .cluster_frame_counts()
            .refused_foreign_cluster
            > 0
    });
    super::bad_packets::assert_logged("cluster frame from another cluster; refused");
    // Its join retries keep coming and keep being refused.
    let refused = members[0]
        .remoting
        .cluster_frame_counts()
        .refused_foreign_cluster;
    await_cond_within(
        dilated(std::time::Duration::from_secs(10)),
        "a retried join is refused too",
        || {
            members[0]
                .remoting
                .cluster_frame_counts()
                .refused_foreign_cluster
                > refused
        },
    );
    for cluster in &clusters {
        let state = cluster.state();
        assert_eq!(state.members.len(), 2, "{state:?}");
    }
    assert!(
        foreign.state().self_member.is_none(),
        "{:?}",
        foreign.state()
    );
    // A node is in one cluster at most.
    let again = Cluster::start(&members[0].system, &members[0].remoting, quick("test", &[]));
    assert!(matches!(again, Err(ClusterError::AlreadyStarted(_))));
    nodes.stop_all().await;
}

/// A node with another shared secret never gets past the handshake: the
/// refusal is logged, its cluster counts its packets dropped, and it
/// never becomes a member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_another_secret_is_refused() {
    crate::log_capture::install_at(tracing::Level::INFO);
    let mut nodes = nodes();
    let mut members = Vec::new();
    for _ in 0..2 {
        members.push(
            nodes
                .start_with(SYSTEM, Settings::default(), with_secret("ours"))
                .await,
        );
    }
    let (clusters, _probes) = form(&members);
    let stranger = nodes
        .start_with(SYSTEM, Settings::default(), with_secret("theirs"))
        .await;
    let outsider = Cluster::start(
        &stranger.system,
        &stranger.remoting,
        quick("test", &[&members[0]]),
    )
    .expect("a cluster starts");
    await_cond_within(deadline(), "the refused handshake logged", || {
        !crate::log_capture::lines_with("shared secret is wrong").is_empty()
    });
    await_cond_within(deadline(), "the outsider's packets dropped", || {
        outsider.send_drops() > 0
    });
    for cluster in &clusters {
        assert_eq!(cluster.state().members.len(), 2, "{:?}", cluster.state());
    }
    assert!(outsider.state().self_member.is_none());
    nodes.stop_all().await;
}

fn with_secret(secret: &str) -> RemoteSettings {
    RemoteSettings {
        secret: Some(secret.to_owned()),
        ..RemoteSettings::default()
    }
}
