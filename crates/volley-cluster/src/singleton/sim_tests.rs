//! The singleton's placement rules in the simulator: each node's view is
//! built from the cluster events it saw (virtual time, seeded network),
//! and its duty applied as the manager applies it. The hand-over
//! messages are modelled as instant (the network and process tests carry
//! them for real); what this checks is the membership side: across a
//! leave, a crash and a partition, no two nodes ever run the instance.

use std::collections::BTreeMap;
use std::time::Duration;

use super::duty::{duty, Duty};
use super::oldest::Membership;
use crate::member::{MemberStatus, UniqueAddress};
use crate::node_id::Addr;
use crate::sbr::{SbrSettings, StableAfter};
use crate::sim::{seeds, SimConfig, Simulation};

const STEP: Duration = Duration::from_millis(20);
const LIMIT: Duration = Duration::from_secs(120);
/// The resolver's `stable_after` here, and the singleton's
/// `down_removal_margin`, as the settings advise.
const STABLE_AFTER: Duration = Duration::from_secs(7);

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
#[derive(Default)]
struct Model {
    nodes: BTreeMap<UniqueAddress, ModelNode>,
    seen: usize,
    most_running: usize,
    starts: Vec<(Duration, UniqueAddress)>,
}

impl Model {
    /// Takes in the events since the last look, then applies duties
    /// until nothing changes.
    fn observe(&mut self, sim: &Simulation) {
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
        while self.apply_duties(sim.now()) {}
        let now_running = self.nodes.values().filter(|n| n.running).count();
        self.most_running = self.most_running.max(now_running);
    }

    /// One round of duties; true if anything changed.
    fn apply_duties(&mut self, now: Duration) -> bool {
        let mut changed = false;
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
                Duty::Start if !node.done => {
                    self.nodes.get_mut(me).expect("known").running = true;
                    self.starts.push((now, me.clone()));
                    changed = true;
                }
                Duty::AwaitMargin(downed) => {
                    let node = self.nodes.get_mut(me).expect("known");
                    for member in downed {
                        let end = *node
                            .margins
                            .entry(member.clone())
                            .or_insert(now + STABLE_AFTER);
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

    fn runner(&self) -> Option<UniqueAddress> {
        self.nodes
            .iter()
            .find(|(_, n)| n.running)
            .map(|(a, _)| a.clone())
    }
}

fn addr_of(member: &UniqueAddress) -> Addr {
    (member.host.clone(), member.port)
}

/// Runs until `until` holds of the model, observing at every step.
fn run(sim: &mut Simulation, model: &mut Model, what: &str, until: impl Fn(&Model) -> bool) {
    let seed = sim.seed();
    let end = sim.now() + LIMIT;
    while !until(model) {
        assert!(sim.now() < end, "seed {seed}: {what} not within {LIMIT:?}");
        sim.run_for(STEP);
        model.observe(sim);
        assert!(
            model.most_running <= 1,
            "seed {seed}: two instances ({what}): {:?}",
            model.starts
        );
    }
}

/// Five members with keep-majority, started and joined.
fn five(seed: u64) -> (Simulation, Vec<Addr>) {
    let mut config = SimConfig::lan(seed, 5);
    config.membership.split_brain_resolver = Some(SbrSettings {
        stable_after: StableAfter::Fixed(STABLE_AFTER),
        ..SbrSettings::default()
    });
    let mut sim = Simulation::new(config);
    let addrs: Vec<Addr> = (1..=5)
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

/// The instance starts on the oldest; it moves after a leave of the
/// oldest, a crash of the next (downed by the resolver), and a partition
/// that cuts the third off alone (it downs itself, the others remove it):
/// never two running at once in any node's view, at any step.
#[test]
fn the_instance_moves_on_leave_crash_and_partition_and_never_runs_twice() {
    for seed in seeds(&[71, 72]) {
        let (mut sim, addrs) = five(seed);
        let mut model = Model::default();
        run(&mut sim, &mut model, "a first instance", |m| {
            m.runner().is_some()
        });

        let first = model.runner().expect("running");
        sim.leave(&addr_of(&first));
        run(&mut sim, &mut model, "the move after a leave", |m| {
            m.runner().is_some_and(|r| r != first)
        });

        let second = model.runner().expect("running");
        sim.kill(&addr_of(&second));
        run(&mut sim, &mut model, "the move after a crash", |m| {
            m.runner().is_some_and(|r| r != second)
        });

        let third = model.runner().expect("running");
        let alone = vec![addr_of(&third)];
        let rest: Vec<Addr> = addrs
            .iter()
            .filter(|a| **a != addr_of(&third) && **a != addr_of(&first) && **a != addr_of(&second))
            .cloned()
            .collect();
        sim.partition(&[alone, rest]);
        run(&mut sim, &mut model, "the move after a partition", |m| {
            m.runner().is_some_and(|r| r != third)
        });
        assert_eq!(model.starts.len(), 4, "seed {seed}: {:?}", model.starts);
    }
}
