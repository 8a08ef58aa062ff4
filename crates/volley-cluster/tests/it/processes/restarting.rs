//! A node restarted on its port is a new member.

use std::time::Duration;

use volley_testkit::dilated;
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
            cluster.tail_and_save()
        );
    }
}

/// How long the bytes from the other nodes to the restarted first seed
/// take. Its connections' handshakes need one such trip, so its announces
/// (sent again every `retry_unsuccessful_join_after` until it forms, each
/// held up to 2 s for a handshake) reach the others after it; the others'
/// answers need a second trip, so none reaches it before
/// [`SEED_TIMEOUT`], when it forms alone. Loading the machine only
/// delays the answers more.
const SLOW_LINK: Duration = Duration::from_secs(2);

/// The restarted first seed's `seed_node_timeout`: over one trip of
/// [`SLOW_LINK`] (its handshakes finish while it still announces), under
/// two (nothing of the others' reaches it first).
const SEED_TIMEOUT: Duration = Duration::from_secs(3);

/// Node 0, the first seed, is killed, removed, and started again while
/// the bytes to it take [`SLOW_LINK`]: its announces reach the others,
/// whose SWIM takes it in, but their answers reach it only after its
/// `seed_node_timeout` ([`SEED_TIMEOUT`]), so it forms a cluster of its own, as Akka's first
/// seed does when no other seed answers in time. The two clusters reach
/// each other (the running one's answers and probes arrive) and must stay
/// apart (Akka: gossip from a node that is not a member is ignored): node
/// 0 refuses the packets of another formation and counts them, and for
/// 10 s after that, the links fast again, no node of either cluster sees a
/// member of the other. Before formations, volley's tables merged and the
/// new node was Up in the running cluster with its own up-number 1, the
/// oldest: with a singleton or sharding that ran them twice (found by
/// `processes::sharding`).
#[test]
#[ignore = "slow: a restart behind slow links, then a 10 s watch; run with --ignored"]
fn a_first_seed_that_formed_a_cluster_alone_stays_out_of_the_running_one() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start_with(4, |i, config| {
        if i == 0 {
            config.seed_node_timeout = Some(SEED_TIMEOUT);
        }
    });
    cluster.await_all_up();
    let (others, old) = ([1, 2, 3], cluster.member(0).to_owned());
    cluster.kill(0);
    cluster.await_seen(&others, "Removed", &old);
    for other in others {
        cluster
            .relays
            .set_link(other, 0, LinkMode::Delay(SLOW_LINK));
    }
    cluster.restart(0);
    let new = cluster.member(0).to_owned();
    cluster.await_seen(&[0], "Up", &new);
    await_refusals(&mut cluster, 0);
    cluster.relays.heal();
    let (runs, island) = (others.map(|i| cluster.run_of(i)), cluster.run_of(0));
    let members: Vec<String> = others
        .iter()
        .map(|&i| cluster.member(i).to_owned())
        .collect();
    let merged = cluster.wait_for_lines(dilated(Duration::from_secs(10)), |lines| {
        lines.iter().any(|l| {
            let event = !l.log && l.text.starts_with("EVENT ");
            let took_new = runs.contains(&l.run) && l.text.ends_with(&new);
            let took_old = l.run == island && members.iter().any(|m| l.text.ends_with(m.as_str()));
            event && (took_new || took_old)
        })
    });
    assert!(
        !merged,
        "the two clusters merged\n{}",
        cluster.tail_and_save()
    );
}

/// Waits until node `i` has refused a packet of another formation (the
/// fifth number of its `counts`).
fn await_refusals(cluster: &mut ProcessCluster, i: usize) {
    let deadline = std::time::Instant::now() + super::cluster::step();
    loop {
        cluster.command(i, "counts");
        let counts = cluster.numbers(i, "COUNTS ");
        if counts.get(4).is_some_and(|&refused| refused > 0) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node {i} refused nothing of another formation: {counts:?}\n{}",
            cluster.tail_and_save()
        );
    }
}
