//! `Cluster::get`: the cluster started earlier on a system, found from the
//! system alone (Akka's `Cluster(system)`).

use volley_cluster::{Cluster, ClusterError, ClusterSettings, MemberStatus};
use volley_testkit::await_cond_within;

use super::{all_up, deadline, nodes, quick, start_nodes};

/// No cluster before `Cluster::start`; afterwards the same membership
/// (its state and requests) from the system alone; a second start is
/// refused and leaves the first in place; a system without a cluster
/// still has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_returns_the_cluster_started_on_the_system() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 2).await;
    assert!(Cluster::get(&members[0].system).is_none());

    let started = Cluster::start(&members[0].system, &members[0].remoting, quick("test", &[]))
        .expect("a cluster starts");
    let found = Cluster::get(&members[0].system).expect("the started cluster");
    assert_eq!(found.self_member(), started.self_member());
    found.leave().expect("the found cluster takes requests");

    let again = Cluster::start(&members[0].system, &members[0].remoting, quick("test", &[]));
    assert!(matches!(again, Err(ClusterError::AlreadyStarted(_))));
    let still = Cluster::get(&members[0].system).expect("the first cluster");
    assert_eq!(still.self_member(), started.self_member());
    assert!(Cluster::get(&members[1].system).is_none());
    nodes.stop_all().await;
}

/// Akka's `Cluster(system).join(Cluster(system).selfAddress)`, the way
/// Akka's own specs form a cluster of one: the node is Up alone at once
/// (no seed-node timeout), and a second node joins through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_its_own_address_forms_a_cluster_of_one() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 2).await;
    // No seeds, and a seed-node timeout no test would wait for.
    let settings = ClusterSettings {
        seed_node_timeout: std::time::Duration::from_secs(3600),
        ..quick("test", &[])
    };
    let first = Cluster::start(&members[0].system, &members[0].remoting, settings.clone())
        .expect("a cluster starts");
    first
        .join(members[0].remoting.address())
        .expect("the cluster runs");
    await_cond_within(deadline(), "the first node Up alone", || {
        let state = first.state();
        state.members.len() == 1
            && state
                .self_member
                .is_some_and(|m| m.status == MemberStatus::Up)
    });
    let second = Cluster::start(&members[1].system, &members[1].remoting, settings)
        .expect("a cluster starts");
    second
        .join(members[0].remoting.address())
        .expect("the cluster runs");
    all_up(&[first, second]);
    nodes.stop_all().await;
}
