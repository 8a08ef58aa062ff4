//! `Cluster::get`: the cluster started earlier on a system, found from the
//! system alone (Akka's `Cluster(system)`).

use volley_cluster::{Cluster, ClusterError};

use super::{nodes, quick, start_nodes};

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
