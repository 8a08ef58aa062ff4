//! Members A to G of Pekko's `TestAddresses` (same hosts, up-numbers and
//! roles) and a harness that builds each side's view of a partition the
//! way Pekko's `StrategySetup` does.

use std::collections::BTreeSet;

use crate::node_id::NodeId;
use crate::sbr::{Decision, DoubleIndirectlyConnected, Partition, SbrMember, SbrStatus, Strategy};

pub(super) fn node(host: &str) -> NodeId {
    NodeId::new(host, 7355, 0, 0)
}

fn up(host: &str, up_number: u32, roles: &[&str]) -> SbrMember {
    SbrMember::new(node(host), SbrStatus::Up, up_number).with_roles(roles.iter().copied())
}

pub(super) fn a() -> SbrMember {
    up("a", 5, &["role3"])
}
pub(super) fn b() -> SbrMember {
    up("b", 4, &["role1", "role3"])
}
pub(super) fn c() -> SbrMember {
    up("c", 3, &["role2"])
}
pub(super) fn d() -> SbrMember {
    up("d", 2, &["role1", "role2", "role3"])
}
pub(super) fn e() -> SbrMember {
    up("e", 1, &[])
}
pub(super) fn f() -> SbrMember {
    up("f", 5, &[])
}
pub(super) fn g() -> SbrMember {
    up("g", 6, &[])
}

/// Not yet Up: no up-number yet (Akka gives such members `Int.MaxValue`).
pub(super) fn joining(m: SbrMember) -> SbrMember {
    SbrMember {
        up_number: u32::MAX,
        ..m.with_status(SbrStatus::Joining)
    }
}
pub(super) fn weakly_up(m: SbrMember) -> SbrMember {
    SbrMember {
        up_number: u32::MAX,
        ..m.with_status(SbrStatus::WeaklyUp)
    }
}
pub(super) fn leaving(m: SbrMember) -> SbrMember {
    m.with_status(SbrStatus::Leaving)
}
pub(super) fn exiting(m: SbrMember) -> SbrMember {
    m.with_status(SbrStatus::Exiting)
}
pub(super) fn downed(m: SbrMember) -> SbrMember {
    m.with_status(SbrStatus::Down)
}

pub(super) fn nodes(members: &[SbrMember]) -> BTreeSet<NodeId> {
    members.iter().map(|m| m.node.clone()).collect()
}

/// Up to three sides of a clean partition, plus indirect connections given
/// as observations: each side sees the members of the other sides
/// unreachable (observed by its first member), and the indirect
/// observations as well.
pub(super) struct Setup {
    pub strategy: Strategy,
    pub side1: Vec<SbrMember>,
    pub side2: Vec<SbrMember>,
    pub side3: Vec<SbrMember>,
    pub indirectly_connected: Vec<(SbrMember, SbrMember)>,
}

impl Setup {
    pub fn new(strategy: Strategy) -> Self {
        Self {
            strategy,
            side1: Vec::new(),
            side2: Vec::new(),
            side3: Vec::new(),
            indirectly_connected: Vec::new(),
        }
    }

    fn everyone(&self) -> impl Iterator<Item = &SbrMember> {
        self.side1.iter().chain(&self.side2).chain(&self.side3)
    }

    /// The view from `side`.
    pub fn view(&self, side: &[SbrMember]) -> Partition {
        let mut view = Partition::new();
        for member in self.everyone() {
            view.upsert(member.clone());
        }
        let here = nodes(side);
        let mut observations: BTreeSet<(NodeId, NodeId)> = self
            .indirectly_connected
            .iter()
            .map(|(from, to)| (from.node.clone(), to.node.clone()))
            .collect();
        if let Some(observer) = side.first() {
            for other in self.everyone().filter(|m| !here.contains(&m.node)) {
                observations.insert((observer.node.clone(), other.node.clone()));
            }
        }
        for (_, subject) in &observations {
            view.set_unreachable(subject, true);
        }
        view.set_observations(observations);
        view.set_seen_by(here);
        view
    }

    pub fn decide(&self, side: &[SbrMember]) -> Decision {
        self.strategy.decide(&self.view(side))
    }

    /// What the strategy downs from `side`, deciding first.
    pub fn nodes_to_down(
        &self,
        side: &[SbrMember],
    ) -> Result<BTreeSet<NodeId>, DoubleIndirectlyConnected> {
        let view = self.view(side);
        let decision = self.strategy.decide(&view);
        self.strategy.nodes_to_down(&view, decision, &side[0].node)
    }

    /// Every non-empty side downs exactly `expected`.
    pub fn assert_downing(&self, expected: &[SbrMember]) {
        for side in [&self.side1, &self.side2, &self.side3] {
            if !side.is_empty() {
                self.assert_downing_side(side, expected);
            }
        }
    }

    pub fn assert_downing_side(&self, side: &[SbrMember], expected: &[SbrMember]) {
        let downed = self.nodes_to_down(side).expect("a decision");
        assert_eq!(downed, nodes(expected), "seen from {:?}", nodes(side));
    }
}
