//! A node restarted on its port is a new member.

use volley_testkit::relay::LinkMode;

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

/// Node 0, the first seed, is killed, removed, and started again with
/// the links to it held at the relays (its own announces pass) for longer
/// than `seed_node_timeout`: it forms a cluster of its own, as Akka's
/// first seed does when no other seed answers, while the others' SWIM
/// already holds it. Once the links pass again the running cluster must not
/// take that cluster's member in (Akka's stay apart: gossip from a node
/// that is not a member is ignored). volley's tables merge instead, and
/// the new node is Up in the running cluster with its own up-number 1,
/// the oldest: with a singleton or sharding that runs them twice (found
/// by `processes::sharding`).
#[test]
#[ignore = "fails in about half the runs: a cluster formed by a restarted first seed merges into the running one (docs/reference/sharding.md, Not yet)"]
fn a_first_seed_that_formed_a_cluster_alone_stays_out_of_the_running_one() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(4);
    cluster.await_all_up();
    let (others, old) = ([1, 2, 3], cluster.member(0).to_owned());
    cluster.kill(0);
    cluster.await_seen(&others, "Removed", &old);
    for other in others {
        cluster.relays.set_link(other, 0, LinkMode::Block);
    }
    cluster.restart(0);
    let new = cluster.member(0).to_owned();
    cluster.await_seen(&[0], "Up", &new);
    cluster.relays.heal();
    // Time passing is the test: the running cluster never takes it in.
    std::thread::sleep(volley_testkit::dilated(std::time::Duration::from_secs(10)));
    for i in others {
        let merged = cluster.reports(i, &format!("EVENT Up {new}"));
        assert!(
            merged.is_empty(),
            "node {i} took in {new}\n{}",
            cluster.tail_and_save()
        );
    }
}
