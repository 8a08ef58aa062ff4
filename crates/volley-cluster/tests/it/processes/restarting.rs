//! A node restarted on its port is a new member.

use super::{serial, ProcessCluster};

/// Node 2 is killed and started again on the same ports: its new
/// incarnation is Up on every node and the old one Removed on the others.
#[test]
fn a_node_restarted_on_its_port_joins_anew_and_the_old_incarnation_is_removed() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(3);
    cluster.await_all_up();
    let old = cluster.member(2).to_owned();
    cluster.restart(2);
    let new = cluster.member(2).to_owned();
    assert_ne!(old, new, "a restart is a new incarnation");
    cluster.await_seen(&[0, 1], "Removed", &old);
    cluster.await_seen(&[0, 1, 2], "Up", &new);
}

/// The long version: node 2 of 5 killed and restarted ten times in a row;
/// each new incarnation is Up everywhere and each old one Removed, and no
/// other node is ever judged unreachable.
#[test]
#[ignore = "long: ten restarts; run with --ignored"]
fn a_node_restarted_ten_times_is_a_new_member_each_time() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(5);
    cluster.await_all_up();
    let others = [0, 1, 3, 4];
    for _ in 0..10 {
        let old = cluster.member(2).to_owned();
        cluster.restart(2);
        let new = cluster.member(2).to_owned();
        cluster.await_seen(&others, "Removed", &old);
        cluster.await_seen(&[0, 1, 2, 3, 4], "Up", &new);
    }
    for i in others {
        let unreachable: Vec<String> = cluster
            .reports(i, "EVENT Unreachable ")
            .into_iter()
            .filter(|l| others.iter().any(|&o| l.ends_with(cluster.member(o))))
            .collect();
        assert!(
            unreachable.is_empty(),
            "node {i}: {unreachable:?}\n{}",
            cluster.tail()
        );
    }
}
