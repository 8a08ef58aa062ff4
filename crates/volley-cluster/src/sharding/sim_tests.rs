//! Sharding's placement rules in the simulator: no shard is hosted by two
//! live regions at any step, across graceful leaves (of a region's node
//! and of the coordinator's), a crash and a partition, each resolved by
//! the split-brain resolver.
//!
//! What is modelled, from each node's cluster events (virtual time, a
//! seeded network with delays and losses):
//! - the coordinator runs where the singleton's rules put it
//!   ([`Model`](crate::singleton::sim_model::Model)), and a new instance
//!   starts from the shards the regions it can reach report, waiting
//!   `coordinator_state_wait` for the members whose region did not;
//! - it frees a region's shards as [`RegionMembers`] says: a removed
//!   member's after `down_removal_margin` (a remote watch in a cluster
//!   fires at the removal), a graceful leaver's once it handed them off;
//! - a region stops its shards when its node sees itself Leaving (the
//!   hand-off) or Down or Removed (its coordinated shutdown), or dies;
//! - every shard takes traffic all the time, so a shard with no home is
//!   allocated at once, least shards first.
//!
//! Messages between live nodes are instant when the two sides reach each
//! other, and lost otherwise; a real shutdown takes longer than nothing,
//! which is what the margin covers. The network and process tests carry
//! the protocol for real.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::region_members::{authority_of, RegionMembers, WhenFree};
use crate::member::{ClusterEvent, MemberStatus, UniqueAddress};
use crate::node_id::Addr;
use crate::sim::{seeds, Simulation};
use crate::singleton::sim_model::{
    addr_of, end_once_removed, keep_majority_cluster, views, Model, LIMIT, STEP,
};

/// The resolver's `stable_after`, and sharding's `down_removal_margin`.
const STABLE_AFTER: Duration = Duration::from_secs(7);
/// Sharding's default `coordinator_state_wait`.
const STATE_WAIT: Duration = Duration::from_secs(5);
const SHARDS: u32 = 30;

/// One node's region.
struct Region {
    shards: BTreeSet<u32>,
    /// Stopped: by a hand-off of everything, a shutdown or a crash.
    stopped: bool,
    /// Stopped because its node left gracefully: its shards were handed
    /// off, and the coordinator learns so when it reaches the region.
    handed_off: bool,
}

/// The running coordinator instance.
struct Coordinator {
    at: UniqueAddress,
    members: RegionMembers,
    homes: BTreeMap<u32, UniqueAddress>,
    registered: BTreeSet<UniqueAddress>,
    /// Removed members whose shards are free at that time.
    free_at: BTreeMap<UniqueAddress, Duration>,
    /// Until then, nothing is allocated (some region did not report).
    startup_until: Duration,
}

struct Sharding {
    singleton: Model,
    regions: BTreeMap<UniqueAddress, Region>,
    coordinator: Option<Coordinator>,
    seen: usize,
    /// The sides of the current partition; empty when whole.
    sides: Vec<Vec<Addr>>,
    most_hosts: usize,
    allocations: usize,
}

impl Sharding {
    fn new() -> Self {
        Self {
            singleton: Model::new(STABLE_AFTER),
            regions: BTreeMap::new(),
            coordinator: None,
            seen: 0,
            sides: Vec::new(),
            most_hosts: 0,
            allocations: 0,
        }
    }

    fn reach(&self, a: &UniqueAddress, b: &UniqueAddress) -> bool {
        let (a, b) = (addr_of(a), addr_of(b));
        self.sides.is_empty() || self.sides.iter().any(|s| s.contains(&a) && s.contains(&b))
    }

    fn live(&self, member: &UniqueAddress) -> bool {
        self.regions.get(member).is_some_and(|r| !r.stopped)
    }

    /// Takes in what happened since the last look, then lets the
    /// coordinator act, and counts the hosts of every shard.
    fn observe(&mut self, sim: &Simulation) {
        self.singleton.observe(sim);
        for entry in &sim.cluster_trace()[self.seen..] {
            self.apply(UniqueAddress::of(&entry.node), &entry.event, entry.at);
        }
        self.seen = sim.cluster_trace().len();
        let running: BTreeSet<UniqueAddress> =
            sim.running().iter().map(UniqueAddress::of).collect();
        for (member, region) in &mut self.regions {
            if !running.contains(member) {
                region.stop();
            }
        }
        self.follow_the_singleton(sim);
        self.coordinate(sim.now());
        for shard in 0..SHARDS {
            let hosts = self
                .regions
                .values()
                .filter(|r| !r.stopped && r.shards.contains(&shard))
                .count();
            self.most_hosts = self.most_hosts.max(hosts);
        }
    }

    fn apply(&mut self, node: UniqueAddress, event: &ClusterEvent, at: Duration) {
        let region = self.regions.entry(node.clone()).or_insert_with(Region::new);
        match about_self(event, &node) {
            Some(MemberStatus::Leaving) if !region.stopped => {
                region.stop();
                region.handed_off = true;
            }
            Some(MemberStatus::Down | MemberStatus::Removed) => region.stop(),
            _ => {}
        }
        let Some(coordinator) = self.coordinator.as_mut().filter(|c| c.at == node) else {
            return;
        };
        if let Some(removed) = coordinator.members.apply(event) {
            let member = self
                .regions
                .keys()
                .find(|m| authority_of(m) == removed)
                .cloned();
            if let Some(member) = member {
                coordinator.free_at.insert(member, at + STABLE_AFTER);
            }
        }
    }

    /// A new instance where the singleton now runs: it learns the shards
    /// of the regions it reaches that its members host.
    fn follow_the_singleton(&mut self, sim: &Simulation) {
        let runner = self.singleton.runner();
        if self.coordinator.as_ref().map(|c| &c.at) == runner.as_ref() {
            return;
        }
        self.coordinator = runner.map(|at| {
            let state = sim.state(&addr_of(&at)).expect("the runner runs");
            let members = RegionMembers::from_state(&state);
            let hosting: BTreeSet<String> = members.hosting().cloned().collect();
            let mut coordinator = Coordinator {
                at: at.clone(),
                members,
                homes: BTreeMap::new(),
                registered: BTreeSet::new(),
                free_at: BTreeMap::new(),
                startup_until: sim.now(),
            };
            let mut unregistered = hosting.clone();
            for (member, region) in &self.regions {
                let reports = hosting.contains(&authority_of(member)) && self.reach(&at, member);
                if reports && !region.stopped {
                    unregistered.remove(&authority_of(member));
                    coordinator.registered.insert(member.clone());
                    for shard in &region.shards {
                        coordinator.homes.insert(*shard, member.clone());
                    }
                }
            }
            if !unregistered.is_empty() {
                coordinator.startup_until = sim.now() + STATE_WAIT;
            }
            coordinator
        });
    }

    /// Frees what may be freed, registers the regions it reaches, and
    /// allocates every shard without a home.
    fn coordinate(&mut self, now: Duration) {
        let Some(mut coordinator) = self.coordinator.take() else {
            return;
        };
        let handed_off: Vec<UniqueAddress> = coordinator
            .registered
            .iter()
            .filter(|m| !self.live(m) && self.reach(&coordinator.at, m))
            .filter(|m| self.regions.get(*m).is_some_and(|r| r.handed_off))
            .cloned()
            .collect();
        let free: Vec<UniqueAddress> = coordinator
            .free_at
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(m, _)| m.clone())
            .chain(handed_off)
            .collect();
        for member in free {
            coordinator.free_at.remove(&member);
            coordinator.registered.remove(&member);
            coordinator.homes.retain(|_, home| *home != member);
        }
        for (member, region) in &self.regions {
            let up = coordinator.members.when_free(&authority_of(member)) == WhenFree::Now;
            if up && !region.stopped && self.reach(&coordinator.at, member) {
                coordinator.registered.insert(member.clone());
            }
        }
        if now >= coordinator.startup_until {
            self.allocate(&mut coordinator);
        }
        self.coordinator = Some(coordinator);
    }

    fn allocate(&mut self, coordinator: &mut Coordinator) {
        for shard in 0..SHARDS {
            if coordinator.homes.contains_key(&shard) {
                continue;
            }
            let least = coordinator
                .registered
                .iter()
                .filter(|m| self.live(m))
                .min_by_key(|m| coordinator.homes.values().filter(|h| h == m).count())
                .cloned();
            let Some(home) = least else { return };
            coordinator.homes.insert(shard, home.clone());
            if let Some(region) = self.regions.get_mut(&home) {
                region.shards.insert(shard);
            }
            self.allocations += 1;
        }
    }

    /// The member hosting each shard, if every shard has exactly one
    /// live host.
    fn placement(&self) -> Option<BTreeMap<u32, UniqueAddress>> {
        let mut placement = BTreeMap::new();
        for (member, region) in self.regions.iter().filter(|(_, r)| !r.stopped) {
            for shard in &region.shards {
                placement.insert(*shard, member.clone());
            }
        }
        (placement.len() == SHARDS as usize).then_some(placement)
    }

    /// Each live region's shards and the coordinator's homes, for a
    /// failure's message.
    fn describe(&self) -> String {
        let mut text = String::new();
        for (member, region) in &self.regions {
            let shards: Vec<_> = region.shards.iter().collect();
            text += &format!(
                "\n{}:{} stopped={} {shards:?}",
                member.host, member.port, region.stopped
            );
        }
        if let Some(c) = &self.coordinator {
            text += &format!(
                "\ncoordinator at {}: registered {:?}",
                c.at.host,
                c.registered
                    .iter()
                    .map(|m| m.host.clone())
                    .collect::<Vec<_>>()
            );
        }
        text
    }

    fn hosts(&self, member: &UniqueAddress) -> bool {
        self.regions
            .get(member)
            .is_some_and(|r| !r.stopped && !r.shards.is_empty())
    }
}

impl Region {
    fn new() -> Self {
        Self {
            shards: BTreeSet::new(),
            stopped: false,
            handed_off: false,
        }
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.shards.clear();
    }
}

/// The status `event` gives `node` itself, if it is about `node`.
fn about_self(event: &ClusterEvent, node: &UniqueAddress) -> Option<MemberStatus> {
    match event {
        ClusterEvent::MemberLeft { member }
        | ClusterEvent::MemberExited { member }
        | ClusterEvent::MemberDowned { member }
            if member.unique_address() == *node =>
        {
            Some(member.status)
        }
        ClusterEvent::MemberRemoved { member, .. } if member.unique_address() == *node => {
            Some(MemberStatus::Removed)
        }
        _ => None,
    }
}

/// Runs until `until` holds of the model, checking at every step that no
/// shard has two live hosts.
fn run(sim: &mut Simulation, model: &mut Sharding, what: &str, until: impl Fn(&Sharding) -> bool) {
    let seed = sim.seed();
    let end = sim.now() + LIMIT;
    while !until(model) {
        assert!(
            sim.now() < end,
            "seed {seed}: {what} not within {LIMIT:?}: {}{}",
            model.describe(),
            views(sim)
        );
        sim.run_for(STEP);
        model.observe(sim);
        assert!(
            model.most_hosts <= 1,
            "seed {seed}: a shard hosted twice ({what}) at {:?}: {}",
            sim.now(),
            model.describe()
        );
    }
}

/// The hosting member that is not the coordinator's, the one with the
/// most shards.
fn a_region_host(model: &Sharding) -> UniqueAddress {
    let coordinator = model.coordinator.as_ref().map(|c| c.at.clone());
    let placement = model.placement().expect("all placed");
    let mut counts: BTreeMap<UniqueAddress, usize> = BTreeMap::new();
    for member in placement.values() {
        *counts.entry(member.clone()).or_default() += 1;
    }
    counts
        .into_iter()
        .filter(|(m, _)| Some(m) != coordinator.as_ref())
        .max_by_key(|(_, n)| *n)
        .map(|(m, _)| m)
        .expect("a host besides the coordinator's node")
}

/// Thirty shards placed on seven members; then, one at a time, a
/// region's node leaves, the coordinator's node leaves, a region's node
/// crashes, a region's node is cut off alone, and the coordinator's node
/// is cut off alone. After each, every shard is
/// hosted again, never by two live regions at any step.
#[test]
fn no_shard_is_hosted_twice_across_leaves_a_crash_and_a_partition() {
    for seed in seeds(&[81, 82]) {
        let (mut sim, addrs) = keep_majority_cluster(seed, 7, STABLE_AFTER);
        let mut model = Sharding::new();
        run(&mut sim, &mut model, "a first placement", |m| {
            m.placement().is_some()
        });

        let leaver = a_region_host(&model);
        sim.leave(&addr_of(&leaver));
        run(&mut sim, &mut model, "the hand-off of a leaver", |m| {
            m.placement().is_some() && !m.hosts(&leaver)
        });
        end_once_removed(&mut sim, &leaver, |sim| model.observe(sim));

        let coordinator = model.coordinator.as_ref().expect("running").at.clone();
        sim.leave(&addr_of(&coordinator));
        run(&mut sim, &mut model, "the coordinator's move", |m| {
            let moved = m.coordinator.as_ref().is_some_and(|c| c.at != coordinator);
            moved && m.placement().is_some() && !m.hosts(&coordinator)
        });
        end_once_removed(&mut sim, &coordinator, |sim| model.observe(sim));

        let crashed = a_region_host(&model);
        sim.kill(&addr_of(&crashed));
        run(&mut sim, &mut model, "the move after a crash", |m| {
            m.placement().is_some() && !m.hosts(&crashed)
        });

        let cut = a_region_host(&model);
        let gone = [&leaver, &coordinator, &crashed, &cut].map(addr_of);
        let rest: Vec<Addr> = addrs
            .iter()
            .filter(|a| !gone.contains(a))
            .cloned()
            .collect();
        model.sides = vec![vec![addr_of(&cut)], rest.clone()];
        sim.partition(&model.sides);
        run(&mut sim, &mut model, "the move after a partition", |m| {
            m.placement().is_some() && !m.hosts(&cut)
        });
        assert_eq!(rest.len(), 3, "seed {seed}: three nodes stayed");

        let coordinator = model.coordinator.as_ref().expect("running").at.clone();
        let others: Vec<Addr> = rest
            .iter()
            .filter(|a| **a != addr_of(&coordinator))
            .cloned()
            .collect();
        model.sides = vec![vec![addr_of(&coordinator)], others];
        sim.partition(&model.sides);
        run(
            &mut sim,
            &mut model,
            "the move after the coordinator's cut",
            |m| {
                let moved = m.coordinator.as_ref().is_some_and(|c| c.at != coordinator);
                moved && m.placement().is_some() && !m.hosts(&coordinator)
            },
        );
        assert!(
            model.allocations > SHARDS as usize,
            "seed {seed}: shards moved"
        );
    }
}
