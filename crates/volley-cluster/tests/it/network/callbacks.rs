//! `Cluster::register_on_member_up` and `register_on_member_removed`
//! (Akka's `registerOnMemberUp` and `registerOnMemberRemoved`), and
//! `shutdown_after_unsuccessful_join_seed_nodes`.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use volley::ShutdownReason;
use volley_cluster::{Cluster, ClusterError};
use volley_testkit::await_cond_within;
use volley_testkit::remote::Node;

use super::{all_up, deadline, nodes, oldest_index, quick, quick_with_seeds, start_nodes, SYSTEM};

/// What a callback tells the test: its name and the thread it ran on.
type Ran = mpsc::Sender<(&'static str, thread::ThreadId)>;

fn tell(ran: &Ran, name: &'static str) -> impl FnOnce() + Send + 'static {
    let ran = ran.clone();
    move || {
        let _ = ran.send((name, thread::current().id()));
    }
}

/// Up callbacks run at this node's MemberUp (past one that panics), and
/// at once when registered on a node Up already; a removal callback runs
/// at the node's removal, while the node keeps running; once the cluster
/// has stopped an Up callback is refused and a removal callback runs at
/// once, on the caller's thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_run_when_this_node_is_up_and_when_it_is_removed() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 2).await;
    let seeds: Vec<&Node> = members.iter().collect();
    let (ran, runs): (Ran, _) = mpsc::channel();
    let clusters: Vec<Cluster> = members
        .iter()
        .map(|node| {
            let mut settings = quick("test", &seeds);
            settings.run_coordinated_shutdown_when_leaving = false;
            Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts")
        })
        .collect();
    let leaver = oldest_index_when_up(&clusters);
    let cluster = &clusters[leaver];
    let next = || runs.recv_timeout(deadline()).expect("a callback ran").0;

    // Up already: runs at once (the second test waits for a join).
    cluster
        .register_on_member_up(|| panic!("a callback that panics"))
        .expect("the cluster runs");
    cluster
        .register_on_member_up(tell(&ran, "up"))
        .expect("the cluster runs");
    assert_eq!(next(), "up");

    cluster.register_on_member_removed(tell(&ran, "removed"));
    assert!(runs.try_recv().is_err(), "nothing runs before the removal");
    cluster.leave().expect("the cluster runs");
    assert_eq!(next(), "removed");
    assert!(!members[leaver].system.is_terminated());

    nodes.stop_all().await;
    await_cond_within(deadline(), "the cluster's driver stopped", || {
        matches!(
            cluster.register_on_member_up(|| {}),
            Err(ClusterError::Stopped)
        )
    });
    cluster.register_on_member_removed(tell(&ran, "after stop"));
    let (name, on) = runs.try_recv().expect("run at once");
    assert_eq!((name, on), ("after stop", thread::current().id()));
}

/// An Up callback registered before the node joined runs at its
/// MemberUp (the node forms a cluster alone, as the only seed); a
/// removal callback runs when the system terminates first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_up_callback_waits_for_the_join_and_a_removal_callback_for_the_end() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 1).await;
    let (ran, runs): (Ran, _) = mpsc::channel();
    let cluster = Cluster::start(&members[0].system, &members[0].remoting, quick("test", &[]))
        .expect("a cluster starts");
    cluster
        .register_on_member_up(tell(&ran, "up"))
        .expect("the cluster runs");
    cluster.register_on_member_removed(tell(&ran, "removed"));
    assert!(runs.try_recv().is_err(), "not Up before it joins");
    cluster
        .join_seed_nodes(&[members[0].remoting.address().clone()])
        .expect("the cluster runs");
    assert_eq!(runs.recv_timeout(deadline()).expect("Up").0, "up");
    assert!(cluster
        .state()
        .self_member
        .is_some_and(|m| m.status == volley_cluster::MemberStatus::Up));
    nodes.stop_all().await;
    assert_eq!(runs.recv_timeout(deadline()).expect("removed").0, "removed");
}

fn oldest_index_when_up(clusters: &[Cluster]) -> usize {
    all_up(clusters);
    oldest_index(clusters)
}

/// `shutdown_after_unsuccessful_join_seed_nodes`: a node whose only seed
/// never answers runs coordinated shutdown (`ClusterJoinUnsuccessful`)
/// once the time is up; one that joined in time does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_cannot_join_its_seeds_in_time_shuts_down() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 2).await;
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let nobody = format!("volley://{SYSTEM}@{}", silent.local_addr().expect("bound"));
    let mut lonely = quick_with_seeds("test", vec![nobody]);
    lonely.shutdown_after_unsuccessful_join_seed_nodes = Some(Duration::from_millis(300));
    let mut joins = quick("test", &[&members[1]]);
    joins.shutdown_after_unsuccessful_join_seed_nodes = Some(Duration::from_millis(300));
    let (ran, runs): (Ran, _) = mpsc::channel();
    let lonely =
        Cluster::start(&members[0].system, &members[0].remoting, lonely).expect("a cluster starts");
    lonely.register_on_member_removed(tell(&ran, "removed"));
    let joined =
        Cluster::start(&members[1].system, &members[1].remoting, joins).expect("a cluster starts");
    await_cond_within(deadline(), "the lonely node shut down", || {
        members[0].system.coordinated_shutdown().reason()
            == Some(ShutdownReason::ClusterJoinUnsuccessful)
    });
    assert_eq!(runs.recv_timeout(deadline()).expect("removed").0, "removed");
    assert!(lonely.state().self_member.is_none(), "it never joined");
    assert!(joined.state().self_member.is_some());
    assert_eq!(members[1].system.coordinated_shutdown().reason(), None);
    drop(silent);
    nodes.stop_all().await;
}
