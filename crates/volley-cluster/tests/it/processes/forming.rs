//! Five node processes join through three seeds.

use super::{serial, ProcessCluster};

/// Every node sees every node Up, each through the relays, and the relays
/// found which node dialled each connection.
#[test]
fn five_processes_join_and_each_sees_all_up() {
    let _turn = serial();
    let cluster = ProcessCluster::start(5);
    cluster.await_all_up();
    assert_eq!(cluster.relays.unknown(), 0, "{}", cluster.tail());
}
