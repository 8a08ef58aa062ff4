//! The singleton manager's placement rules as a model over the
//! simulator (test only): each node's view is built from the cluster
//! events it saw, and its duty applied as the manager applies it (a start
//! also needs the agreement of the node's table), with hand-over
//! messages taken as instant. The singleton's simulation tests
//! use it, and so do sharding's, whose coordinator is a singleton.

use std::collections::BTreeMap;
use std::time::Duration;

use super::agreement::may_start;
use super::duty::{duty, Duty};
use super::oldest::Membership;
use crate::member::{MemberStatus, UniqueAddress};
use crate::node_id::Addr;
use crate::sbr::{SbrSettings, StableAfter};
use crate::sim::{SimConfig, Simulation};

/// How often a model looks at the simulation.
pub(crate) const STEP: Duration = Duration::from_millis(20);
/// How long a model waits for any one thing.
pub(crate) const LIMIT: Duration = Duration::from_secs(120);

/// One node's manager, as modelled.
#[derive(Default)]
struct ModelNode {
    members: Membership,
    running: bool,
    done: bool,
    alive: bool,
    /// Downed older members removed, with the end of their margin.
    margins: BTreeMap<UniqueAddress, Duration>,
}

/// Every node's manager, fed from the simulation's trace.
pub(crate) struct Model {
    nodes: BTreeMap<UniqueAddress, ModelNode>,
    seen: usize,
    /// The most instances running at once, at any observation.
    pub(crate) most_running: usize,
    /// Every start: when, and where.
    pub(crate) starts: Vec<(Duration, UniqueAddress)>,
    /// How long a downed older member is waited for after its removal.
    pub(crate) margin: Duration,
}

impl Model {
    /// No node yet; a downed older member is waited for `margin` after
    /// its removal (the singleton's `down_removal_margin`).
    pub(crate) fn new(margin: Duration) -> Self {
        Self {
            nodes: BTreeMap::new(),
            seen: 0,
            most_running: 0,
            starts: Vec::new(),
            margin,
        }
    }

    /// Takes in the events since the last look, then applies duties
    /// until nothing changes.
    pub(crate) fn observe(&mut self, sim: &Simulation) {
        for entry in &sim.cluster_trace()[self.seen..] {
            let me = UniqueAddress::of(&entry.node);
            let node = self.nodes.entry(me).or_insert_with(|| ModelNode {
                alive: true,
                ..ModelNode::default()
            });
            node.members.apply(&entry.event);
        }
        self.seen = sim.cluster_trace().len();
        let running: Vec<UniqueAddress> = sim.running().iter().map(UniqueAddress::of).collect();
        for (me, node) in &mut self.nodes {
            if !running.contains(me) {
                node.alive = false;
                node.running = false;
            }
        }
        while self.apply_duties(sim) {}
        let now_running = self.nodes.values().filter(|n| n.running).count();
        self.most_running = self.most_running.max(now_running);
    }

    /// One round of duties; true if anything changed.
    fn apply_duties(&mut self, sim: &Simulation) -> bool {
        let now = sim.now();
        let mut changed = false;
        let margin = self.margin;
        let addresses: Vec<UniqueAddress> = self.nodes.keys().cloned().collect();
        for me in &addresses {
            let node = &self.nodes[me];
            if !node.alive {
                continue;
            }
            match duty(&node.members, me, None, node.running) {
                Duty::HandOver => {
                    let node = self.nodes.get_mut(me).expect("known");
                    (node.running, node.done) = (false, true);
                    changed = true;
                }
                Duty::Start if !node.done && agreed(sim, me) => {
                    self.nodes.get_mut(me).expect("known").running = true;
                    self.starts.push((now, me.clone()));
                    changed = true;
                }
                Duty::AwaitMargin(downed) => {
                    let node = self.nodes.get_mut(me).expect("known");
                    for member in downed {
                        let end = *node.margins.entry(member.clone()).or_insert(now + margin);
                        if end <= now {
                            node.members.margin_passed(&member);
                            changed = true;
                        }
                    }
                }
                Duty::AwaitHandOver(previous) => {
                    for asked in previous {
                        changed |= self.ask_to_hand_over(me, &asked);
                    }
                }
                _ => {}
            }
        }
        changed
    }

    /// `asker` asks `asked` to hand over, answered at once as the manager
    /// answers: a member that still sees itself Up ignores it.
    fn ask_to_hand_over(&mut self, asker: &UniqueAddress, asked: &UniqueAddress) -> bool {
        if let Some(node) = self.nodes.get_mut(asked).filter(|n| n.alive) {
            let up = node
                .members
                .record(asked)
                .is_some_and(|r| r.status == MemberStatus::Up);
            if up && !node.done {
                return false;
            }
            (node.running, node.done) = (false, true);
        }
        self.nodes
            .get_mut(asker)
            .expect("known")
            .members
            .release(asked);
        true
    }

    pub(crate) fn runner(&self) -> Option<UniqueAddress> {
        self.nodes
            .iter()
            .find(|(_, n)| n.running)
            .map(|(a, _)| a.clone())
    }
}

/// Whether the table of `me` lets it start the instance, as the
/// manager's agreement check requires.
fn agreed(sim: &Simulation, me: &UniqueAddress) -> bool {
    sim.state(&addr_of(me))
        .is_some_and(|state| may_start(&state, me, None))
}

pub(crate) fn addr_of(member: &UniqueAddress) -> Addr {
    (member.host.clone(), member.port)
}

/// Runs until every other node has removed the leaver `member`, then
/// ends its process, as its coordinated shutdown does. (A removed core
/// left running would still take part in SWIM and relay gossip, which no
/// real leaver does: it bridged the sides of a later partition.)
pub(crate) fn end_once_removed(
    sim: &mut Simulation,
    member: &UniqueAddress,
    mut observe: impl FnMut(&Simulation),
) {
    let removed = |sim: &Simulation| {
        sim.running().iter().map(UniqueAddress::of).all(|node| {
            node == *member
                || sim
                    .state(&addr_of(&node))
                    .is_none_or(|state| state.members.iter().all(|r| r.unique_address() != *member))
        })
    };
    let seed = sim.seed();
    let end = sim.now() + LIMIT;
    while !removed(sim) {
        assert!(sim.now() < end, "seed {seed}: the leaver not removed");
        sim.run_for(STEP);
        observe(sim);
    }
    sim.kill(&addr_of(member));
}

/// `n` members (`10.0.0.1` and up) under keep-majority with
/// `stable_after`, started and joined through the first three.
pub(crate) fn keep_majority_cluster(
    seed: u64,
    n: u8,
    stable_after: Duration,
) -> (Simulation, Vec<Addr>) {
    let mut config = SimConfig::lan(seed, u32::from(n));
    config.membership.split_brain_resolver = Some(SbrSettings {
        stable_after: StableAfter::Fixed(stable_after),
        ..SbrSettings::default()
    });
    let mut sim = Simulation::new(config);
    let addrs: Vec<Addr> = (1..=n)
        .map(|i| (std::sync::Arc::from(format!("10.0.0.{i}")), 2552))
        .collect();
    for addr in &addrs {
        sim.start_node(&addr.0, addr.1);
    }
    for addr in &addrs {
        sim.join_seed_nodes(addr, &addrs[..3]);
    }
    (sim, addrs)
}

/// Each running node's view, for a failure's message.
pub(crate) fn views(sim: &Simulation) -> String {
    let mut text = String::new();
    for node in sim.running() {
        let member = UniqueAddress::of(&node);
        let Some(state) = sim.state(&addr_of(&member)) else {
            continue;
        };
        let members: Vec<String> = state
            .members
            .iter()
            .map(|r| format!("{}={:?}", r.unique_address().host, r.status))
            .collect();
        text += &format!("\n{} sees {}", member.host, members.join(" "));
    }
    for entry in sim.downing_trace() {
        text += &format!(
            "\n{:?} {} {:?}",
            entry.at,
            UniqueAddress::of(&entry.node).host,
            entry.downing
        );
    }
    text
}
