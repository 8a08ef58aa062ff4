//! The cases where the split-brain resolver decides on the network
//! (design §6.2): a node stopped past `stable_after`, and a 3/2 partition
//! under keep-majority. The losing side downs itself and its system
//! terminates (`ClusterDowning`), so no actor stays reachable on both
//! sides.

use super::{serial, ProcessCluster};

/// Node 4 is stopped (SIGSTOP) past the resolver's stable time: the others
/// see it Unreachable, then down and remove it by themselves; when it
/// resumes it sees itself Downed and its system terminates.
#[test]
fn a_stopped_node_is_downed_by_the_resolver() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(5);
    cluster.await_all_up();
    let (stopped, others) = (4, [0, 1, 2, 3]);
    let gone = cluster.member(stopped).to_owned();
    cluster.signal(stopped, "STOP");
    cluster.await_seen(&others, "Unreachable", &gone);
    cluster.await_seen(&others, "Removed", &gone);
    cluster.signal(stopped, "CONT");
    cluster.await_report(stopped, &format!("EVENT Downed {gone}"));
    cluster.await_report(stopped, "SHUTDOWN ClusterDowning");
    cluster.await_report(stopped, "TERMINATED");
    // The survivors still serve each other.
    cluster.command(0, &format!("send {} 10", cluster.port(1)));
    cluster.await_count(1, 10);
}

/// A 3/2 partition through the relays, keep-majority: the majority
/// removes the minority, each minority node sees itself Down and its
/// system terminates, and the majority keeps serving.
#[test]
fn a_three_two_partition_keeps_the_majority() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(5);
    cluster.await_all_up();
    let (majority, minority) = ([0, 1, 2], [3, 4]);
    cluster.relays.partition(&[0, 0, 0, 1, 1]);
    for m in minority {
        let member = cluster.member(m).to_owned();
        cluster.await_seen(&majority, "Removed", &member);
        cluster.await_report(m, &format!("EVENT Downed {member}"));
        cluster.await_report(m, "SHUTDOWN ClusterDowning");
        cluster.await_report(m, "TERMINATED");
    }
    for m in majority {
        assert!(
            cluster.reports(m, "SHUTDOWN").is_empty(),
            "node {m} of the majority shut down\n{}",
            cluster.tail()
        );
    }
    cluster.command(0, &format!("send {} 10", cluster.port(2)));
    cluster.await_count(2, 10);
}
