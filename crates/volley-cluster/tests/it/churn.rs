//! Members killed and restarted on the same address with a new uid
//! (Pekko `RestartNodeSpec`, `QuickRestartSpec`), and killed for good.

use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig, Simulation};
use volley_cluster::{Addr, MembershipEvent, NodeId};

use crate::common::{cluster, join_all, STEP};

/// How long foca keeps a down member before forgetting it, shortened so
/// that the test sees the removal.
const REMOVE_DOWN_AFTER: Duration = Duration::from_secs(20);

#[test]
fn churn_ends_in_one_view_without_the_old_incarnations() {
    for seed in seeds(&[21, 22]) {
        let mut config = SimConfig::lan(seed, 50);
        config.swim.remove_down_after = Some(REMOVE_DOWN_AFTER);
        let (mut sim, addrs) = cluster(config, 50);
        join_all(&mut sim, Duration::from_secs(120));
        let seed_node = sim.node(&addrs[0]).expect("running").identity().clone();

        let restarted = &addrs[10..15];
        let killed = &addrs[20..23];
        let old: Vec<NodeId> = restarted
            .iter()
            .chain(killed)
            .map(|addr| sim.node(addr).expect("running").identity().clone())
            .collect();
        for addr in restarted.iter().chain(killed) {
            sim.kill(addr);
        }
        sim.run_for(Duration::from_secs(2));
        for addr in restarted {
            sim.start_node(&addr.0, addr.1);
            sim.join(addr, &seed_node);
        }

        let took = sim.run_until(Duration::from_secs(120), STEP, |sim| {
            sim.converged() && forgotten_everywhere(sim, &old)
        });
        let took = took.unwrap_or_else(|| panic!("seed {seed}: churn did not settle"));
        eprintln!("seed {seed}: churn settled in {took:?} of virtual time");
        assert_replaced_and_removed(&sim, restarted, killed, seed);
    }
}

/// No running node remembers any of `old`, down or alive.
fn forgotten_everywhere(sim: &Simulation, old: &[NodeId]) -> bool {
    sim.running().iter().all(|node| {
        let core = sim
            .node(&(node.host().into(), node.port()))
            .expect("running");
        core.membership_state()
            .all(|member| !old.iter().any(|gone| gone.same_incarnation(member.id())))
    })
}

/// The trace shows a replacement for each restarted address and a removal
/// for each killed one, and no event names an old incarnation afterwards.
fn assert_replaced_and_removed(sim: &Simulation, restarted: &[Addr], killed: &[Addr], seed: u64) {
    let at = |addr: &Addr, member: &NodeId| member.host() == &*addr.0 && member.port() == addr.1;
    for addr in restarted {
        let replaced = sim.trace().iter().any(|entry| {
            matches!(&entry.event, MembershipEvent::IncarnationReplaced { new, .. } if at(addr, new))
        });
        assert!(
            replaced,
            "seed {seed}: {addr:?}'s new incarnation replaced the old one"
        );
    }
    for addr in killed {
        let removed = sim.trace().iter().any(|entry| {
            matches!(&entry.event, MembershipEvent::MemberRemoved { member } if at(addr, member))
        });
        assert!(removed, "seed {seed}: {addr:?} was removed");
        assert!(sim.node(addr).is_none());
    }
}
