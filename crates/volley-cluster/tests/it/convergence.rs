//! Joining through seed nodes until every member sees every other
//! (Pekko `ConvergenceSpec`, `JoinSeedNodeSpec`, `NodeUpSpec`).

use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig};
use volley_cluster::MembershipEvent;

use crate::common::{cluster, converge, events_of};

#[test]
fn fifty_members_converge_and_each_sees_every_other_up_once() {
    for seed in seeds(&[1, 2]) {
        let (mut sim, _) = cluster(SimConfig::lan(seed, 50), 50);
        let took = converge(&mut sim, Duration::from_secs(120));
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
        let took = converge(&mut sim, Duration::from_secs(120));
        eprintln!("seed {seed}: 50 members converged in {took:?} at 5 % loss");
        assert!(
            sim.stats().packets_lost > 0,
            "seed {seed}: the network lost packets"
        );
    }
}

/// The larger runs the issue asks figures for; `--ignored` runs them.
#[test]
#[ignore = "long: 200 and 1,000 members"]
fn hundreds_of_members_converge() {
    for members in [200, 1000] {
        let seed = seeds(&[7])[0];
        let (mut sim, _) = cluster(SimConfig::lan(seed, members as u32), members);
        let wall = std::time::Instant::now();
        let took = converge(&mut sim, Duration::from_secs(120));
        let stats = sim.stats();
        eprintln!(
            "seed {seed}: {members} members converged in {took:?} of virtual time \
             ({:?} wall), {} packets, {} bytes, {} bytes per member",
            wall.elapsed(),
            stats.packets_sent,
            stats.bytes_sent,
            stats.bytes_sent / members as u64,
        );
    }
}
