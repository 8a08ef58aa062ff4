//! A graceful leave, seen from the nodes that stay.

use std::time::Duration;

use volley::ActorRef;
use volley_cluster::{Cluster, ClusterEvent, MemberStatus};
use volley_testkit::remote::Node;
use volley_testkit::{actor_fn, await_cond_within, TestProbe};

use super::{all_up, deadline, expect_removed, formed, nodes, oldest_index, quick, start_nodes};

/// The third of three nodes leaves: the others see it Leaving, Exiting
/// and Removed (from Exiting), keep each other Up, and a watch of an
/// actor on it from another node ends with exactly one `Terminated`, as
/// the cluster removes the member (`Remoting::member_removed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_leaves_is_removed_and_its_watches_end_once() {
    let mut nodes = nodes();
    let (members, clusters, probes) = formed(&mut nodes, 3).await;
    let (stays, leaver) = (&members[0], &members[2]);
    leaver
        .system
        .spawn("target", actor_fn(|_ctx, _n: u32| Ok(())))
        .expect("spawned");
    let target: ActorRef<u32> = stays.remote_ref(leaver, "target");
    let watcher = TestProbe::<u32>::new(&stays.system);
    watcher.watch(&target);
    await_cond_within(deadline(), "the watch is in place on the leaver", || {
        leaver.remoting.incoming_watches(stays.remoting.address()) == 1
    });

    let gone = clusters[2].self_member().clone();
    clusters[2].leave().expect("the cluster runs");
    for probe in &probes[..2] {
        expect_removed(probe, &gone, MemberStatus::Exiting);
    }
    watcher.expect_terminated_within(deadline(), &target);
    for cluster in &clusters[..2] {
        let state = cluster.state();
        assert!(
            state.members.iter().all(|m| m.unique_address() != gone),
            "{state:?}"
        );
        assert_eq!(state.members.len(), 2, "{state:?}");
    }
    // The leaver's own goodbye, when its system stops, must not end the
    // watch a second time.
    leaver.stop().await;
    watcher.expect_no_msg(Duration::from_millis(500));
    nodes.stop_all().await;
}

/// Akka's `Cluster.leave` of another member's address (the
/// `MembershipChangeListenerLeavingSpec` and `LeaderLeavingSpec` way),
/// by address alone: the first of three makes the third leave; the
/// third, seeing itself Leaving, runs coordinated shutdown with reason
/// `ClusterLeaving` and its system terminates; the others see it Removed
/// from Exiting. An address of another actor system is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_made_to_leave_by_another_leaves_as_if_it_had_asked() {
    let mut nodes = nodes();
    let (members, clusters, probes) = formed(&mut nodes, 3).await;
    let gone = clusters[2].self_member().clone();
    let elsewhere: volley_remote::wire::Address = "volley://other@127.0.0.1:1".parse().unwrap();
    assert!(matches!(
        clusters[0].leave_address(&elsewhere),
        Err(volley_cluster::ClusterError::OtherSystem { .. })
    ));
    clusters[0]
        .leave_address(members[2].remoting.address())
        .expect("the cluster runs");
    for probe in &probes[..2] {
        expect_removed(probe, &gone, MemberStatus::Exiting);
    }
    let leaver = members[2].system.clone();
    tokio::time::timeout(deadline(), leaver.when_terminated())
        .await
        .expect("the member made to leave terminates");
    assert_eq!(
        leaver.coordinated_shutdown().reason(),
        Some(volley::ShutdownReason::ClusterLeaving)
    );
    // Leaving oneself through `leave_member` is `leave`.
    let me = clusters[1].self_member().clone();
    clusters[1]
        .leave_member(me.clone())
        .expect("the cluster runs");
    expect_removed(&probes[0], &me, MemberStatus::Exiting);
    nodes.stop_all().await;
}

/// With `run_coordinated_shutdown_when_leaving = false`, `Cluster::leave`
/// only leaves: no coordinated shutdown runs, the node confirms its exit
/// as soon as it is Exiting (nothing to wait for), the leader removes it
/// on that confirmation (no timeout counted), and the node keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_without_shutdown_confirms_at_once_and_keeps_the_node_running() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 2).await;
    let seeds: Vec<&Node> = members.iter().collect();
    let (clusters, probes): (Vec<Cluster>, Vec<TestProbe<ClusterEvent>>) = members
        .iter()
        .map(|node| {
            let events = TestProbe::on_event_stream(&node.system);
            let mut settings = quick("test", &seeds);
            settings.run_coordinated_shutdown_when_leaving = false;
            let cluster =
                Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts");
            (cluster, events)
        })
        .unzip();
    all_up(&clusters);
    let leaver = oldest_index(&clusters);
    let stays = 1 - leaver;
    let gone = clusters[leaver].self_member().clone();
    clusters[leaver].leave().expect("the cluster runs");
    expect_removed(&probes[stays], &gone, MemberStatus::Exiting);
    expect_removed(&probes[leaver], &gone, MemberStatus::Exiting);
    assert_eq!(clusters[stays].exiting_timeouts(), 0);
    assert_eq!(members[leaver].system.coordinated_shutdown().reason(), None);
    assert!(!members[leaver].system.is_terminated());
    nodes.stop_all().await;
}
