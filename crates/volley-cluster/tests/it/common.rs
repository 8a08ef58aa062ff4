//! Helpers shared by the simulation tests.

use std::sync::Arc;
use std::time::Duration;

use volley_cluster::sim::{SimConfig, Simulation};
use volley_cluster::{Addr, Identity, MembershipEvent, NodeId};

/// How often a test looks at the views while the clock runs.
pub const STEP: Duration = Duration::from_millis(100);

/// The address of the `index`th simulated node.
pub fn addr(index: usize) -> Addr {
    (
        Arc::from(format!("10.0.{}.{}", index / 250, index % 250 + 1)),
        2552,
    )
}

/// A simulation of `members` nodes on foca's LAN defaults, every one
/// joining through one of the first three (the seed nodes), not yet run.
pub fn cluster(config: SimConfig, members: usize) -> (Simulation, Vec<Addr>) {
    let mut sim = Simulation::new(config);
    let addrs: Vec<Addr> = (0..members).map(addr).collect();
    let ids: Vec<NodeId> = addrs.iter().map(|a| sim.start_node(&a.0, a.1)).collect();
    for (index, addr) in addrs.iter().enumerate().skip(1) {
        let seed_node = &ids[index % 3.min(index)];
        sim.join(addr, seed_node);
    }
    (sim, addrs)
}

/// How long a node that knows no one waits before it announces itself
/// again. foca sends one announce per call and does not retry it, so a
/// lost announce leaves the node alone; the seed-node logic of a later
/// step will retry as Akka's `seed-node-timeout` (5 s) does, and the tests
/// do it by hand until then.
pub const RETRY_JOIN: Duration = Duration::from_secs(5);

/// Runs until every running node sees every other, or fails naming the
/// seed; nodes still alone announce themselves again to the first running
/// node every [`RETRY_JOIN`].
pub fn converge(sim: &mut Simulation, limit: Duration) -> Duration {
    let seed = sim.seed();
    let start = sim.now();
    let mut next_retry = start + RETRY_JOIN;
    while !sim.converged() {
        assert!(
            sim.now() - start < limit,
            "seed {seed}: no convergence within {limit:?}"
        );
        sim.run_for(STEP);
        if sim.now() >= next_retry {
            retry_joins(sim);
            next_retry += RETRY_JOIN;
        }
    }
    sim.now() - start
}

fn retry_joins(sim: &mut Simulation) {
    let running = sim.running();
    let Some((via, others)) = running.split_first() else {
        return;
    };
    for node in others {
        let addr = node.addr();
        if sim.node(&addr).is_some_and(|core| core.num_members() == 0) {
            sim.join(&addr, via);
        }
    }
}

/// The events `observer`'s incarnation saw that match `wanted`.
pub fn events_of<'a>(
    sim: &'a Simulation,
    observer: &'a NodeId,
    wanted: impl Fn(&MembershipEvent) -> bool + 'a,
) -> impl Iterator<Item = &'a MembershipEvent> + 'a {
    sim.trace()
        .iter()
        .filter(move |entry| entry.node.same_incarnation(observer))
        .map(|entry| &entry.event)
        .filter(move |event| wanted(event))
}
