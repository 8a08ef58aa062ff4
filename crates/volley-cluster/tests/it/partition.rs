//! A clean partition splits the view, a heal joins it again (Pekko
//! `SplitBrainSpec` up to the point a resolver would act, and
//! `SurviveNetworkInstabilitySpec`'s heal).

use std::collections::BTreeSet;
use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig, Simulation};
use volley_cluster::{Addr, Identity, MembershipEvent};

use crate::common::{cluster, converge, events_of, join_all, STEP};

#[test]
fn a_partition_splits_the_view_and_a_heal_rejoins_it() {
    for seed in seeds(&[11]) {
        let (mut sim, addrs) = cluster(SimConfig::lan(seed, 50), 50);
        join_all(&mut sim, Duration::from_secs(120));
        let (majority, minority) = addrs.split_at(30);
        sim.partition(&[majority.to_vec(), minority.to_vec()]);

        let split = sim.run_until(Duration::from_secs(120), STEP, |sim| {
            sim.group_converged(majority) && sim.group_converged(minority)
        });
        let split = split.unwrap_or_else(|| panic!("seed {seed}: the view did not split"));
        assert_unreachable_seen(&sim, majority, minority.len(), seed);
        assert_unreachable_seen(&sim, minority, majority.len(), seed);

        sim.heal();
        let healed = converge(&mut sim, Duration::from_secs(900));
        eprintln!("seed {seed}: 30/20 split in {split:?}, healed in {healed:?} of virtual time");
        for addr in majority {
            let node = sim.node(addr).expect("running").identity().clone();
            let back: BTreeSet<Addr> = events_of(&sim, &node, |_| true)
                .filter_map(|event| match event {
                    MembershipEvent::MemberReachable { member } => Some(member.addr()),
                    _ => None,
                })
                .collect();
            assert!(
                minority.iter().all(|other| back.contains(other)),
                "seed {seed}: {node} saw every member of the other side come back"
            );
        }
    }
}

/// Each node of `side` saw at least `others` members become unreachable.
fn assert_unreachable_seen(sim: &Simulation, side: &[Addr], others: usize, seed: u64) {
    for addr in side {
        let node = sim.node(addr).expect("running").identity().clone();
        let lost = events_of(sim, &node, |e| {
            matches!(e, MembershipEvent::MemberUnreachable { .. })
        });
        assert!(
            lost.count() >= others,
            "seed {seed}: {node} saw the other side go"
        );
    }
}
