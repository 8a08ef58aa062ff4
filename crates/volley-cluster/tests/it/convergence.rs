//! Joining through seed nodes until every member sees every other
//! (Pekko `ConvergenceSpec`, `JoinSeedNodeSpec`, `NodeUpSpec`).

use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig};
use volley_cluster::MembershipEvent;

use crate::common::{cluster, events_of, join_all};

#[test]
fn fifty_members_converge_and_each_sees_every_other_up_once() {
    for seed in seeds(&[1, 2]) {
        let (mut sim, _) = cluster(SimConfig::lan(seed, 50), 50);
        let took = join_all(&mut sim, Duration::from_secs(120));
        eprintln!("seed {seed}: 50 members converged in {took:?} of virtual time");
        for node in sim.running() {
            let ups = events_of(&sim, &node, |e| {
                matches!(e, MembershipEvent::MemberUp { .. })
            });
            assert_eq!(
                ups.count(),
                49,
                "seed {seed}: {node} saw each other member up once"
            );
            let joined = events_of(&sim, &node, |e| *e == MembershipEvent::Joined);
            assert_eq!(joined.count(), 1, "seed {seed}: {node} joined once");
            let unreachable = events_of(&sim, &node, |e| {
                matches!(e, MembershipEvent::MemberUnreachable { .. })
            });
            assert_eq!(unreachable.count(), 0, "seed {seed}: no false suspicion");
        }
    }
}

#[test]
fn fifty_members_converge_through_a_lossy_network() {
    for seed in seeds(&[3]) {
        let mut config = SimConfig::lan(seed, 50);
        config.network.loss = 0.05;
        let (mut sim, _) = cluster(config, 50);
        let took = join_all(&mut sim, Duration::from_secs(120));
        eprintln!("seed {seed}: 50 members converged in {took:?} at 5 % loss");
        assert!(
            sim.stats().packets_lost > 0,
            "seed {seed}: the network lost packets"
        );
    }
}

/// The larger run the issue asks figures for; `--ignored` runs it (in
/// release: it takes minutes in a debug build). A joint start of 1,000
/// members did not converge within 900 s of virtual time with seed 7
/// (`docs/reference/cluster.md`) on foca alone; joining through seed
/// nodes with the membership is `membership::two_hundred_members_...`.
#[test]
#[ignore = "long: 200 members"]
fn hundreds_of_members_converge() {
    let members = 200;
    let seed = seeds(&[7])[0];
    let (mut sim, _) = cluster(SimConfig::lan(seed, members as u32), members);
    let wall = std::time::Instant::now();
    let took = join_all(&mut sim, Duration::from_secs(900));
    let joined = sim.stats();
    let steady = Duration::from_secs(60);
    sim.run_for(steady);
    let after = sim.stats();
    let per_node_per_s =
        |bytes: u64, time: Duration| bytes as f64 / members as f64 / time.as_secs_f64();
    eprintln!(
        "seed {seed}: {members} members converged in {took:?} of virtual time \
         ({:?} wall); {} packets, {:.0} B per member per s until then; \
         then {:.0} B and {:.1} packets per member per s",
        wall.elapsed(),
        joined.packets_sent,
        per_node_per_s(joined.bytes_sent, took),
        per_node_per_s(after.bytes_sent - joined.bytes_sent, steady),
        per_node_per_s(after.packets_sent - joined.packets_sent, steady),
    );
}
