//! A deterministic simulator for [`ClusterCore`]s (design §6.1).
//!
//! Many cores run in one thread over a virtual clock; packets travel
//! through a simulated network with delay, loss and cut links, and timers
//! fire when the clock reaches them. Every random choice (uids, delays,
//! losses, foca's own) comes from the seed, so a run replays exactly from
//! its seed, events and all: a failing test prints its seed, and
//! `VOLLEY_CLUSTER_SEED` replays it ([`seeds`]).
//!
//! Nodes are addressed by [`Addr`]; a packet reaches whatever node runs at
//! its address when it arrives, so a restarted node on the same address
//! receives what was meant for its predecessor, as a real one would.

mod network;
mod schedule;
mod trace;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use foca::{Config, Identity};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};

use crate::core::{ClusterCore, Input, Outputs};
use crate::member::{ClusterState, MembershipConfig, UniqueAddress};
use crate::node_id::{Addr, NodeId};
use crate::outbox::Channel;
use crate::receptionist::ServiceEntry;

pub use self::network::NetworkConfig;
use self::network::{Fate, Network};
use self::schedule::{Due, Schedule};
pub use self::trace::{ClusterTraceEntry, DowningTraceEntry, SimStats, TraceEntry};

/// The wall-clock time the simulation pretends to start at, in ms: each
/// node's `born_ms` is this plus the virtual time it started.
const EPOCH_MS: u64 = 1_800_000_000_000;

/// What a simulation runs with.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The seed of every random choice.
    pub seed: u64,
    /// foca's configuration, the same for every node.
    pub swim: Config,
    /// The membership settings, the same for every node.
    pub membership: MembershipConfig,
    /// How packets travel.
    pub network: NetworkConfig,
}

impl SimConfig {
    /// foca's LAN defaults for `members` nodes, a lossless network with
    /// short delays ([`NetworkConfig::default`]).
    pub fn lan(seed: u64, members: u32) -> Self {
        let members = std::num::NonZeroU32::new(members.max(1)).expect("at least one");
        Self {
            seed,
            swim: Config::new_lan(members),
            membership: MembershipConfig::default(),
            network: NetworkConfig::default(),
        }
    }
}

/// The seeds a simulation test runs with: `VOLLEY_CLUSTER_SEED` alone when
/// it is set (to replay a failure), else `defaults`.
pub fn seeds(defaults: &[u64]) -> Vec<u64> {
    match std::env::var("VOLLEY_CLUSTER_SEED") {
        Ok(seed) => vec![seed.trim().parse().expect("VOLLEY_CLUSTER_SEED is a u64")],
        Err(_) => defaults.to_vec(),
    }
}

/// Many cluster cores over a virtual clock and a simulated network.
pub struct Simulation {
    config: SimConfig,
    now: Duration,
    rng: Xoshiro256PlusPlus,
    nodes: BTreeMap<Addr, ClusterCore>,
    network: Network,
    schedule: Schedule,
    trace: Vec<TraceEntry>,
    cluster_trace: Vec<ClusterTraceEntry>,
    downing_trace: Vec<DowningTraceEntry>,
    stats: SimStats,
}

impl Simulation {
    /// An empty simulation at virtual time zero.
    pub fn new(config: SimConfig) -> Self {
        Self {
            now: Duration::ZERO,
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            nodes: BTreeMap::new(),
            network: Network::new(config.network.clone()),
            schedule: Schedule::default(),
            trace: Vec::new(),
            cluster_trace: Vec::new(),
            downing_trace: Vec::new(),
            stats: SimStats::default(),
            config,
        }
    }

    /// The simulation's seed.
    pub fn seed(&self) -> u64 {
        self.config.seed
    }

    /// The virtual time.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// Starts a node at `host:port` with a fresh uid (replacing whatever
    /// ran there) and returns its identity. It knows no one until it joins.
    pub fn start_node(&mut self, host: &str, port: u16) -> NodeId {
        let born_ms = EPOCH_MS + u64::try_from(self.now.as_millis()).unwrap_or(u64::MAX);
        let id = NodeId::new(Arc::<str>::from(host), port, self.rng.next_u64(), born_ms);
        let core = ClusterCore::with_membership(
            id.clone(),
            self.config.swim.clone(),
            self.config.membership.clone(),
            self.rng.next_u64(),
        );
        self.nodes.insert(id.addr(), core);
        id
    }

    /// Makes the node at `addr` join through `via` (foca's announce).
    pub fn join(&mut self, addr: &Addr, via: &NodeId) {
        self.input(addr, Input::Join(via.clone()));
    }

    /// Makes the node at `addr` join through the seed nodes at `seeds`.
    pub fn join_seed_nodes(&mut self, addr: &Addr, seeds: &[Addr]) {
        self.input(addr, Input::JoinSeedNodes(seeds.to_vec()));
    }

    /// Makes the node at `addr` leave the cluster gracefully (it leaves
    /// the SWIM group at once if it never became a member); it keeps
    /// running.
    pub fn leave(&mut self, addr: &Addr) {
        self.input(addr, Input::Leave);
    }

    /// Tells the node at `addr` that its exiting tasks are done (what the
    /// runtime's `cluster-exiting-done` phase does), when the membership
    /// settings have it wait for that (`confirm_exiting_on_request`).
    pub fn confirm_exiting(&mut self, addr: &Addr) {
        self.input(addr, Input::ConfirmExiting);
    }

    /// Registers (or, with `registered` false, removes) one of the
    /// services of the node at `addr` in the cluster receptionist.
    pub fn register_service(&mut self, addr: &Addr, entry: ServiceEntry, registered: bool) {
        self.input(addr, Input::Service { entry, registered });
    }

    /// Makes the node at `addr` down `member`.
    pub fn down(&mut self, addr: &Addr, member: &UniqueAddress) {
        self.input(addr, Input::Down(member.clone()));
    }

    /// Tells the node at `addr` that the transport lost its connection to
    /// `member` (what a kill -9 of the member's process causes at once).
    pub fn connection_lost(&mut self, addr: &Addr, member: &UniqueAddress) {
        self.input(addr, Input::ConnectionLost(member.clone()));
    }

    /// The membership as the node at `addr` sees it.
    pub fn state(&self, addr: &Addr) -> Option<ClusterState> {
        self.nodes.get(addr).map(ClusterCore::state)
    }

    /// Stops the node at `addr` at once, as a kill -9 would: its timers
    /// are dropped, and packets on their way to its address reach whatever
    /// runs there when they arrive (nothing, or a restarted successor).
    pub fn kill(&mut self, addr: &Addr) {
        self.nodes.remove(addr);
    }

    /// Cuts every link between nodes of different `sides`, both ways.
    pub fn partition(&mut self, sides: &[Vec<Addr>]) {
        for (index, side) in sides.iter().enumerate() {
            for other in sides.iter().skip(index + 1) {
                for a in side {
                    for b in other {
                        self.network.cut_one_way(a.clone(), b.clone());
                        self.network.cut_one_way(b.clone(), a.clone());
                    }
                }
            }
        }
    }

    /// Cuts the link from `from` to `to` only.
    pub fn cut_one_way(&mut self, from: &Addr, to: &Addr) {
        self.network.cut_one_way(from.clone(), to.clone());
    }

    /// Restores every link.
    pub fn heal(&mut self) {
        self.network.heal();
    }

    /// Sets the chance that a packet is lost, from 0.0 to 1.0.
    pub fn set_loss(&mut self, loss: f64) {
        self.network.config.loss = loss;
    }

    /// Runs the virtual clock forward by `duration`.
    pub fn run_for(&mut self, duration: Duration) {
        let deadline = self.now + duration;
        while let Some((at, due)) = self.schedule.pop_until(deadline) {
            self.now = at;
            self.dispatch(due);
        }
        self.now = deadline;
    }

    /// Runs until `condition` holds, checking it every `step` of virtual
    /// time, for at most `limit`; returns the virtual time it took, or
    /// `None` if it never held.
    pub fn run_until(
        &mut self,
        limit: Duration,
        step: Duration,
        mut condition: impl FnMut(&Simulation) -> bool,
    ) -> Option<Duration> {
        let start = self.now;
        while self.now - start < limit {
            if condition(self) {
                return Some(self.now - start);
            }
            self.run_for(step);
        }
        condition(self).then(|| self.now - start)
    }

    /// The identities of the running nodes, in address order.
    pub fn running(&self) -> Vec<NodeId> {
        self.nodes
            .values()
            .map(|core| core.identity().clone())
            .collect()
    }

    /// The core running at `addr`, if any.
    pub fn node(&self, addr: &Addr) -> Option<&ClusterCore> {
        self.nodes.get(addr)
    }

    /// The members the node at `addr` holds active, sorted.
    pub fn view(&self, addr: &Addr) -> Vec<NodeId> {
        let mut members: Vec<NodeId> = self
            .nodes
            .get(addr)
            .map(|core| core.members().cloned().collect())
            .unwrap_or_default();
        members.sort();
        members
    }

    /// Whether every running node in `group` sees exactly the others of
    /// `group` active, by incarnation (the epoch may differ).
    pub fn group_converged(&self, group: &[Addr]) -> bool {
        let cores: Option<Vec<&ClusterCore>> =
            group.iter().map(|addr| self.nodes.get(addr)).collect();
        let Some(cores) = cores else {
            return false;
        };
        // Counting first keeps the check cheap while the views still grow.
        if cores
            .iter()
            .any(|core| core.num_members() != cores.len() - 1)
        {
            return false;
        }
        let incarnations: BTreeSet<(&str, u16, u64)> = cores
            .iter()
            .map(|core| incarnation(core.identity()))
            .collect();
        cores.iter().all(|core| {
            core.members()
                .all(|member| incarnations.contains(&incarnation(member)))
        })
    }

    /// Whether every running node sees every other running node active.
    pub fn converged(&self) -> bool {
        let all: Vec<Addr> = self.nodes.keys().cloned().collect();
        self.group_converged(&all)
    }

    /// Every membership event so far, in the order they happened.
    pub fn trace(&self) -> &[TraceEntry] {
        &self.trace
    }

    /// Every cluster event so far, in the order they happened.
    pub fn cluster_trace(&self) -> &[ClusterTraceEntry] {
        &self.cluster_trace
    }

    /// Every split-brain resolver decision so far, in order.
    pub fn downing_trace(&self) -> &[DowningTraceEntry] {
        &self.downing_trace
    }

    /// Traffic counts so far.
    pub fn stats(&self) -> SimStats {
        self.stats
    }

    fn dispatch(&mut self, due: Due) {
        match due {
            Due::Delivery { to, channel, bytes } => {
                if self.nodes.contains_key(&to) {
                    self.input(&to, Input::received(channel, &bytes));
                } else {
                    self.stats.packets_undeliverable += 1;
                }
            }
            Due::Timer { owner, timer } => {
                let addr = owner.addr();
                let current = self.nodes.get(&addr).map(ClusterCore::identity);
                if current.is_some_and(|current| current.same_incarnation(&owner)) {
                    self.input(&addr, Input::Timer(timer));
                }
            }
        }
    }

    fn input(&mut self, addr: &Addr, input: Input<'_>) {
        let Some(core) = self.nodes.get_mut(addr) else {
            return;
        };
        let observer = core.identity().clone();
        let outputs = core.handle(self.now, input);
        self.carry_out(addr, observer, outputs);
    }

    fn carry_out(&mut self, from: &Addr, observer: NodeId, outputs: Outputs) {
        if outputs.refused.is_some() {
            self.stats.inputs_refused += 1;
        }
        for event in outputs.events {
            self.trace.push(TraceEntry {
                at: self.now,
                node: observer.clone(),
                event,
            });
        }
        for event in outputs.cluster_events {
            self.cluster_trace.push(ClusterTraceEntry {
                at: self.now,
                node: observer.clone(),
                event,
            });
        }
        for downing in outputs.downings {
            self.downing_trace.push(DowningTraceEntry {
                at: self.now,
                node: observer.clone(),
                downing,
            });
        }
        for timer in outputs.timers {
            let due = Due::Timer {
                owner: observer.clone(),
                timer: timer.timer,
            };
            self.schedule.push(timer.at, due);
        }
        for packet in outputs.packets {
            self.send(from, packet.to.addr(), packet.channel, packet.bytes);
        }
    }

    fn send(&mut self, from: &Addr, to: Addr, channel: Channel, bytes: Vec<u8>) {
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += bytes.len() as u64;
        match channel {
            Channel::Swim => {}
            Channel::SyncDigest => self.stats.digest_bytes_sent += bytes.len() as u64,
            Channel::SyncData => self.stats.page_bytes_sent += bytes.len() as u64,
        }
        match self.network.send(from, &to, &mut self.rng) {
            Fate::Arrives(delay) => {
                self.schedule
                    .push(self.now + delay, Due::Delivery { to, channel, bytes });
            }
            Fate::Cut => self.stats.packets_cut += 1,
            Fate::Lost => self.stats.packets_lost += 1,
        }
    }
}

/// A member's incarnation, the part of its identity that does not change
/// when foca renews it.
fn incarnation(id: &NodeId) -> (&str, u16, u64) {
    (id.host(), id.port(), id.uid())
}
