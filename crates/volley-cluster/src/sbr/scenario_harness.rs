//! A few resolvers wired the way the membership layer will feed them, over
//! a network of directed links that can be cut: no packets, no simulator,
//! just who hears whom at each tick.
//!
//! Each tick, every running node is given what it would know by then:
//! - observations ("j cannot hear k") made by every node whose gossip can
//!   reach it, directly or through others;
//! - as unreachable, the subjects of those observations (Akka's aggregated
//!   reachability), itself excepted;
//! - as having seen its state, the nodes its gossip reaches and whose
//!   gossip reaches it back;
//! - whether it is the leader: the lowest address among the members it
//!   knows neither Down nor unreachable.
//!
//! A decision marks its nodes Down at every node the decider's gossip
//! reaches; a node that learns it is Down shuts down (stops running).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use crate::node_id::NodeId;
use crate::sbr::{
    Downing, Observation, SbrInput, SbrMember, SbrSettings, SbrStatus, SplitBrainResolver,
    TICK_INTERVAL,
};

/// What each node was last told, so only changes are fed.
#[derive(Default)]
struct Told {
    unreachable: BTreeSet<usize>,
    observations: BTreeSet<(usize, usize)>,
    seen_by: BTreeSet<usize>,
    leader: bool,
    down: BTreeSet<usize>,
}

struct Node {
    member: SbrMember,
    sbr: SplitBrainResolver,
    running: bool,
    told: Told,
}

/// One decision, when and where it was taken.
pub(super) struct Decided {
    pub at: Duration,
    pub by: String,
    pub downing: Downing,
}

pub(super) struct Cluster {
    nodes: Vec<Node>,
    /// `(from, to)`: what `from` sends does not reach `to`.
    cut: BTreeSet<(usize, usize)>,
    pub now: Duration,
    pub decisions: Vec<Decided>,
}

impl Cluster {
    /// Members named by `hosts`, Up in that order (the first is the oldest),
    /// all reachable, each with a resolver on `settings`.
    pub fn new(hosts: &[&str], settings: &SbrSettings) -> Self {
        let members: Vec<SbrMember> = hosts
            .iter()
            .zip(1..)
            .map(|(host, up)| SbrMember::new(NodeId::new(*host, 2552, 1, 0), SbrStatus::Up, up))
            .collect();
        let nodes = members
            .iter()
            .map(|me| {
                let mut sbr =
                    SplitBrainResolver::new(me.node.clone(), settings.clone(), Duration::ZERO)
                        .expect("valid settings");
                for m in &members {
                    assert_eq!(
                        sbr.handle(Duration::ZERO, SbrInput::Member(m.clone())),
                        None
                    );
                }
                Node {
                    member: me.clone(),
                    sbr,
                    running: true,
                    told: Told::default(),
                }
            })
            .collect();
        Self {
            nodes,
            cut: BTreeSet::new(),
            now: Duration::ZERO,
            decisions: Vec::new(),
        }
    }

    fn index(&self, host: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| n.member.node.host() == host)
            .unwrap_or_else(|| panic!("no node {host}"))
    }

    /// Cuts every link between the groups, both ways.
    pub fn partition(&mut self, left: &[&str], right: &[&str]) {
        for l in left {
            for r in right {
                self.cut_one_way(l, r);
                self.cut_one_way(r, l);
            }
        }
    }

    /// What `from` sends no longer reaches `to`.
    pub fn cut_one_way(&mut self, from: &str, to: &str) {
        let link = (self.index(from), self.index(to));
        self.cut.insert(link);
    }

    pub fn heal(&mut self) {
        self.cut.clear();
    }

    /// Runs ticks until `until`.
    pub fn run_until(&mut self, until: Duration) {
        while self.now + TICK_INTERVAL <= until {
            self.now += TICK_INTERVAL;
            self.tick_all();
        }
    }

    /// The hosts still running.
    pub fn running(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.running)
            .map(|n| n.member.node.host())
            .collect()
    }

    fn hears(&self, listener: usize, speaker: usize) -> bool {
        self.nodes[speaker].running && !self.cut.contains(&(speaker, listener))
    }

    /// The running nodes `from`'s gossip reaches, itself included.
    fn reached_from(&self, from: usize) -> BTreeSet<usize> {
        let mut reached = BTreeSet::from([from]);
        let mut queue = VecDeque::from([from]);
        while let Some(speaker) = queue.pop_front() {
            for listener in 0..self.nodes.len() {
                if self.hears(listener, speaker) && reached.insert(listener) {
                    queue.push_back(listener);
                }
            }
        }
        reached
    }

    fn tick_all(&mut self) {
        let reach: Vec<BTreeSet<usize>> = (0..self.nodes.len())
            .map(|i| self.reached_from(i))
            .collect();
        let observed: BTreeSet<(usize, usize)> = (0..self.nodes.len())
            .filter(|&j| self.nodes[j].running)
            .flat_map(|j| {
                (0..self.nodes.len())
                    .filter(move |&k| k != j)
                    .map(move |k| (j, k))
            })
            .filter(|&(j, k)| !self.hears(j, k))
            .collect();
        for i in 0..self.nodes.len() {
            if !self.nodes[i].running {
                continue;
            }
            let known: BTreeSet<(usize, usize)> = observed
                .iter()
                .copied()
                .filter(|(j, _)| reach[*j].contains(&i))
                .collect();
            let seen_by: BTreeSet<usize> = reach[i]
                .iter()
                .copied()
                .filter(|j| reach[*j].contains(&i))
                .collect();
            self.inform(i, known, seen_by);
            if let Some(downing) = self.nodes[i].sbr.handle(self.now, SbrInput::Tick) {
                self.spread(i, &reach[i], downing);
            }
        }
    }

    fn inform(&mut self, i: usize, known: BTreeSet<(usize, usize)>, seen_by: BTreeSet<usize>) {
        let unreachable: BTreeSet<usize> =
            known.iter().map(|(_, k)| *k).filter(|k| *k != i).collect();
        let ids: Vec<NodeId> = self.nodes.iter().map(|n| n.member.node.clone()).collect();
        let leader = (0..ids.len())
            .find(|k| !self.nodes[i].told.down.contains(k) && !unreachable.contains(k))
            == Some(i);
        let now = self.now;
        let node = &mut self.nodes[i];
        let mut feed =
            |input| assert_eq!(node.sbr.handle(now, input), None, "decisions come on ticks");
        for k in unreachable.difference(&node.told.unreachable) {
            feed(SbrInput::Unreachable(ids[*k].clone()));
        }
        for k in node.told.unreachable.difference(&unreachable) {
            feed(SbrInput::Reachable(ids[*k].clone()));
        }
        if known != node.told.observations {
            let table: Vec<Observation> = known
                .iter()
                .map(|(j, k)| (ids[*j].clone(), ids[*k].clone()))
                .collect();
            feed(SbrInput::Observations(table));
        }
        if seen_by != node.told.seen_by {
            feed(SbrInput::SeenBy(
                seen_by.iter().map(|k| ids[*k].clone()).collect(),
            ));
        }
        if leader != node.told.leader {
            feed(SbrInput::Leader(leader));
        }
        node.told = Told {
            unreachable,
            observations: known,
            seen_by,
            leader,
            down: std::mem::take(&mut node.told.down),
        };
    }

    /// Marks the downed nodes Down wherever the decider's gossip reaches.
    fn spread(&mut self, decider: usize, reached: &BTreeSet<usize>, downing: Downing) {
        let by: BTreeMap<NodeId, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.member.node.clone(), i))
            .collect();
        for &listener in reached {
            for downed in &downing.nodes {
                let k = by[downed];
                let node = &mut self.nodes[listener];
                if node.told.down.insert(k) {
                    let member = self.nodes[k].member.clone().with_status(SbrStatus::Down);
                    let node = &mut self.nodes[listener];
                    let _ = node.sbr.handle(self.now, SbrInput::Member(member));
                }
            }
            let me = self.nodes[listener].member.node.clone();
            if downing.nodes.contains(&me) {
                self.nodes[listener].running = false;
            }
        }
        self.decisions.push(Decided {
            at: self.now,
            by: self.nodes[decider].member.node.host().to_owned(),
            downing,
        });
    }
}
