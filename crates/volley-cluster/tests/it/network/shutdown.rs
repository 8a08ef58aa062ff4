//! Downing and leaving end in the system's coordinated shutdown: a node
//! that sees itself Down terminates with `ShutdownReason::ClusterDowning`
//! (unless told not to), and a member whose system shuts down leaves
//! through the cluster phases (Leaving, Exiting, Removed) rather than
//! vanishing.

use volley::{ShutdownReason, ShutdownStarted};
use volley_cluster::{Cluster, ClusterEvent, ClusterSettings, MemberStatus, UniqueAddress};
use volley_testkit::remote::Node;
use volley_testkit::{FishingOutcome, TestProbe};

use super::{await_all_up, deadline, expect_removed, formed, nodes, quick, start_nodes};

/// Two members with `settings` changed by `tweak`, both Up; the one with
/// the lower address first.
async fn two_up(
    nodes: &mut volley_testkit::remote::Nodes,
    tweak: impl Fn(&mut ClusterSettings),
) -> Vec<(Node, Cluster, TestProbe<ClusterEvent>)> {
    let members = start_nodes(nodes, 2).await;
    let seeds: Vec<&Node> = members.iter().collect();
    let mut started: Vec<_> = members
        .iter()
        .map(|node| {
            let events = TestProbe::on_event_stream(&node.system);
            let mut settings = quick("test", &seeds);
            tweak(&mut settings);
            let cluster =
                Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts");
            (node.clone(), cluster, events)
        })
        .collect();
    let clusters: Vec<&Cluster> = started.iter().map(|(_, c, _)| c).collect();
    let addresses: Vec<_> = clusters.iter().map(|c| c.self_member().clone()).collect();
    await_all_up(&clusters, &addresses);
    started.sort_by(|a, b| a.1.self_member().cmp(b.1.self_member()));
    started
}

/// Of two members, the one with the lower address goes silent: by
/// keep-majority's rule for equal halves the lowest address stays, so
/// the other one downs itself and its system terminates with reason
/// `ClusterDowning`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_survivor_of_two_that_loses_downs_itself_and_terminates() {
    let mut nodes = nodes();
    let pair = two_up(&mut nodes, |_| {}).await;
    let (kept, survivor) = (&pair[0].0, &pair[1].0);
    kept.remoting.shutdown();
    tokio::time::timeout(deadline(), survivor.system.when_terminated())
        .await
        .expect("the downed survivor terminates");
    assert_eq!(
        survivor.system.coordinated_shutdown().reason(),
        Some(ShutdownReason::ClusterDowning)
    );
    nodes.stop_all().await;
}

/// The same with `run_coordinated_shutdown_when_down = false`: the
/// survivor sees itself Down and keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downed_node_keeps_running_when_told_not_to_shut_down() {
    let mut nodes = nodes();
    let pair = two_up(&mut nodes, |s| s.run_coordinated_shutdown_when_down = false).await;
    let (kept, (survivor, cluster, events)) = (&pair[0].0, (&pair[1].0, &pair[1].1, &pair[1].2));
    let me = cluster.self_member().clone();
    let shutdown = TestProbe::<ShutdownStarted>::on_event_stream(&survivor.system);
    kept.remoting.shutdown();
    events.fish_for_within(deadline(), |event| match event {
        ClusterEvent::MemberDowned { member } if member.unique_address() == me => {
            FishingOutcome::Complete
        }
        _ => FishingOutcome::Continue,
    });
    // Nothing starts a shutdown: time passing is what is tested here.
    shutdown.expect_no_msg(std::time::Duration::from_millis(500));
    assert!(!survivor.system.is_terminated());
    assert_eq!(survivor.system.coordinated_shutdown().reason(), None);
    nodes.stop_all().await;
}

/// A member's system terminates: its cluster phases make it Leaving,
/// wait for Exiting and Removed, then leave; the others see it Removed
/// from Exiting (a member that just vanished would be Removed from Down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_whose_system_terminates_leaves_through_the_cluster_phases() {
    let mut nodes = nodes();
    let (members, clusters, probes) = formed(&mut nodes, 3).await;
    let gone = clusters[2].self_member().clone();
    tokio::time::timeout(deadline(), members[2].system.terminate())
        .await
        .expect("the leaver terminates");
    for probe in &probes[..2] {
        for status in [MemberStatus::Leaving, MemberStatus::Exiting] {
            expect_status(probe, &gone, status);
        }
        expect_removed(probe, &gone, MemberStatus::Exiting);
    }
    nodes.stop_all().await;
}

/// Waits until `probe` sees `gone` Leaving or Exiting; a Down on the way
/// fails (the member was meant to leave, not vanish).
fn expect_status(probe: &TestProbe<ClusterEvent>, gone: &UniqueAddress, status: MemberStatus) {
    probe.fish_for_within(deadline(), |event| match event {
        ClusterEvent::MemberLeft { member } | ClusterEvent::MemberExited { member }
            if member.unique_address() == *gone && member.status == status =>
        {
            FishingOutcome::Complete
        }
        ClusterEvent::MemberDowned { member } if member.unique_address() == *gone => {
            panic!("{gone} was downed")
        }
        _ => FishingOutcome::Continue,
    });
}
