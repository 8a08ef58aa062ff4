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
