//! Helpers shared by the simulation tests.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use volley_cluster::sim::{SimConfig, Simulation};
use volley_cluster::{Addr, ClusterEvent, Identity, MemberStatus, MembershipEvent, NodeId};

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

/// How long a node waits before it announces itself again to the first
/// seed while it does not see that seed, in the SWIM-level tests. foca
/// sends one announce per call and never retries it, and a seed that
/// hears announces before its own got through forms an island that foca
/// never merges with the rest (its periodic announces go only to members
/// it knows). These tests join with `Input::Join` and no cluster is ever
/// formed (no seed nodes), so the membership's own retry (every
/// `retry_unsuccessful_join_after`) and its announces to members foca
/// does not know do not cover it; the membership tests use seed nodes.
pub const RETRY_JOIN: Duration = Duration::from_secs(5);

/// Runs until every running node sees every other, announcing again
/// every [`RETRY_JOIN`] the nodes that do not see the first running node;
/// fails naming the seed after `limit`.
pub fn join_all(sim: &mut Simulation, limit: Duration) -> Duration {
    run_to_convergence(sim, limit, true)
}

/// Runs until every running node sees every other, with nothing but
/// foca's own mechanisms; fails naming the seed after `limit`.
pub fn converge(sim: &mut Simulation, limit: Duration) -> Duration {
    run_to_convergence(sim, limit, false)
}

fn run_to_convergence(sim: &mut Simulation, limit: Duration, retry: bool) -> Duration {
    let seed = sim.seed();
    let start = sim.now();
    let mut next_retry = start + RETRY_JOIN;
    while !sim.converged() {
        assert!(
            sim.now() - start < limit,
            "seed {seed}: no convergence within {limit:?}"
        );
        sim.run_for(STEP);
        if retry && sim.now() >= next_retry {
            retry_joins(sim);
            next_retry += RETRY_JOIN;
        }
    }
    sim.now() - start
}

fn retry_joins(sim: &mut Simulation) {
    let running = sim.running();
    let Some((first, others)) = running.split_first() else {
        return;
    };
    for node in others {
        let addr = node.addr();
        let sees_first = sim
            .node(&addr)
            .is_some_and(|core| core.members().any(|member| member.same_incarnation(first)));
        if !sees_first {
            sim.join(&addr, first);
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

/// A simulation of `members` nodes, every one joining through the seed
/// nodes, the first three (the first seed forms the cluster), not yet run.
pub fn seeded_cluster(config: SimConfig, members: usize) -> (Simulation, Vec<Addr>) {
    let mut sim = Simulation::new(config);
    let addrs: Vec<Addr> = (0..members).map(addr).collect();
    let seed_nodes = &addrs[..3.min(members)];
    for addr in &addrs {
        sim.start_node(&addr.0, addr.1);
    }
    for addr in &addrs {
        sim.join_seed_nodes(addr, seed_nodes);
    }
    (sim, addrs)
}

/// Whether every node of `group` sees exactly the members of `group`, all
/// Up, and the same leader.
pub fn all_up(sim: &Simulation, group: &[Addr]) -> bool {
    let mut leaders = BTreeSet::new();
    for addr in group {
        let Some(state) = sim.state(addr) else {
            return false;
        };
        let members: BTreeSet<Addr> = state.members.iter().map(|m| m.node.addr()).collect();
        if members.len() != group.len()
            || !group.iter().all(|addr| members.contains(addr))
            || state.members.iter().any(|m| m.status != MemberStatus::Up)
        {
            return false;
        }
        leaders.insert(state.leader);
    }
    leaders.len() == 1 && leaders.iter().all(Option::is_some)
}

/// Runs until `condition` holds, failing with the seed after `limit`;
/// returns the virtual time it took.
pub fn run_until(
    sim: &mut Simulation,
    limit: Duration,
    what: &str,
    condition: impl FnMut(&Simulation) -> bool,
) -> Duration {
    let seed = sim.seed();
    sim.run_until(limit, STEP, condition)
        .unwrap_or_else(|| panic!("seed {seed}: {what} not within {limit:?}"))
}

/// The cluster events `observer`'s incarnation saw.
pub fn cluster_events_of<'a>(
    sim: &'a Simulation,
    observer: &'a NodeId,
) -> impl Iterator<Item = &'a ClusterEvent> + 'a {
    sim.cluster_trace()
        .iter()
        .filter(move |entry| entry.node.same_incarnation(observer))
        .map(|entry| &entry.event)
}

/// Fails unless no running node saw a member unreachable, downed or
/// removed.
pub fn assert_nobody_lost(sim: &Simulation, seed: u64) {
    for node in sim.running() {
        let trouble: Vec<&ClusterEvent> = cluster_events_of(sim, &node)
            .filter(|e| {
                matches!(
                    e,
                    ClusterEvent::UnreachableMember { .. }
                        | ClusterEvent::MemberDowned { .. }
                        | ClusterEvent::MemberRemoved { .. }
                )
            })
            .collect();
        assert!(trouble.is_empty(), "seed {seed}: {node:?} saw {trouble:?}");
    }
}
