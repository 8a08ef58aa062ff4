//! Formations in the simulator: a cluster formed apart from the running
//! one, by a restarted first seed that heard from no other seed within
//! `seed_node_timeout`, never merges into it once they reach each other
//! (Akka ignores gossip from a node that is not a member); a first seed
//! restarted where it can hear the others joins them instead.

use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig, Simulation};
use volley_cluster::{Addr, ClusterEvent, NodeId, UniqueAddress};

use crate::common::{all_up, cluster_events_of, run_until, seeded_cluster};

const LIMIT: Duration = Duration::from_secs(120);

/// A formed cluster of four; its first seed killed, downed and removed.
fn first_seed_gone(seed: u64) -> (Simulation, Vec<Addr>) {
    let (mut sim, addrs) = seeded_cluster(SimConfig::lan(seed, 4), 4);
    run_until(&mut sim, LIMIT, "all Up", |sim| all_up(sim, &addrs));
    let first = &addrs[0];
    let old = sim.node(first).expect("running").unique_address().clone();
    sim.kill(first);
    sim.down(&addrs[1], &old);
    let others = addrs[1..].to_vec();
    run_until(&mut sim, LIMIT, "the old first seed removed", |sim| {
        all_up(sim, &others)
    });
    (sim, addrs)
}

/// Starts the first seed again, joining through the same seed nodes.
fn restart_first(sim: &mut Simulation, addrs: &[Addr]) -> NodeId {
    let first = &addrs[0];
    let new = sim.start_node(&first.0, first.1);
    sim.join_seed_nodes(first, &addrs[..3]);
    new
}

fn saw_member(sim: &Simulation, observer: &Addr, member: &UniqueAddress) -> bool {
    let node = sim.node(observer).expect("running").identity().clone();
    let saw = cluster_events_of(sim, &node).any(|event| match event {
        ClusterEvent::MemberJoined { member: m } | ClusterEvent::MemberUp { member: m } => {
            m.unique_address() == *member
        }
        _ => false,
    });
    saw
}

#[test]
fn a_restarted_first_seed_that_formed_alone_stays_out_of_the_running_cluster() {
    for seed in seeds(&[31, 32]) {
        let (mut sim, addrs) = first_seed_gone(seed);
        let (first, others) = (&addrs[0], &addrs[1..]);
        // Its announces reach the others; nothing of theirs reaches it.
        for other in others {
            sim.cut_one_way(other, first);
        }
        let new = UniqueAddress::of(&restart_first(&mut sim, &addrs));
        run_until(&mut sim, LIMIT, "the restarted seed Up alone", |sim| {
            all_up(sim, std::slice::from_ref(first))
        });
        sim.heal();
        sim.run_for(Duration::from_secs(60));
        let running = sim.node(&addrs[1]).expect("running").formation();
        let island = sim.node(first).expect("running").formation();
        assert!(running.is_some() && island.is_some() && running != island);
        for other in others {
            assert_eq!(sim.node(other).expect("running").formation(), running);
            assert!(
                !saw_member(&sim, other, &new),
                "seed {seed}: {other:?} took it in"
            );
        }
        assert!(all_up(&sim, others), "seed {seed}: the running cluster");
        assert!(
            all_up(&sim, std::slice::from_ref(first)),
            "seed {seed}: the island"
        );
        let refused = sim.node(first).expect("running").formation_refusals();
        assert!(refused.other_formation > 0, "seed {seed}: {refused:?}");
        assert_eq!(refused.bad_envelope, 0);
    }
}

#[test]
fn a_restarted_first_seed_that_hears_the_others_joins_them() {
    for seed in seeds(&[33, 34]) {
        let (mut sim, addrs) = first_seed_gone(seed);
        let running = sim.node(&addrs[1]).expect("running").formation();
        restart_first(&mut sim, &addrs);
        run_until(&mut sim, LIMIT, "all four Up again", |sim| {
            all_up(sim, &addrs)
        });
        for addr in &addrs {
            assert_eq!(sim.node(addr).expect("running").formation(), running);
            let refused = sim.node(addr).expect("running").formation_refusals();
            assert_eq!(refused.other_formation, 0, "seed {seed}: {addr:?}");
        }
    }
}
