//! The resolver's picture of the cluster from one node: every member, which
//! of them this side cannot reach, and who observed whom as unreachable.

use std::collections::{BTreeMap, BTreeSet};

use crate::node_id::NodeId;
use crate::sbr::member::{SbrMember, SbrStatus};

/// An observation "`observer` cannot reach `subject`", as carried by the
/// membership's reachability table (Akka's `Reachability` records).
pub type Observation = (NodeId, NodeId);

/// Which members a count takes in. The two flags are the two sides of
/// Akka's membership-change edge case: a Joining member may already be Up on
/// the other side, a Leaving one may already be Exiting there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counting {
    /// Also count Joining and WeaklyUp members.
    pub including_possibly_up: bool,
    /// Leave out Leaving members.
    pub excluding_possibly_exiting: bool,
}

impl Counting {
    pub(crate) const PLAIN: Counting = Counting {
        including_possibly_up: false,
        excluding_possibly_exiting: false,
    };
}

/// The members, reachability and gossip-seen state one node's resolver
/// decides on.
#[derive(Debug, Clone, Default)]
pub struct Partition {
    members: BTreeMap<NodeId, SbrMember>,
    unreachable: BTreeSet<NodeId>,
    observations: BTreeSet<Observation>,
    seen_by: BTreeSet<NodeId>,
}

impl Partition {
    /// An empty view.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a member or replaces what was known of it (its status, roles or
    /// up-number changed). Its reachability is kept.
    pub fn upsert(&mut self, member: SbrMember) {
        self.members.insert(member.node.clone(), member);
    }

    /// Forgets a member (Removed), and that it was unreachable.
    pub fn remove(&mut self, node: &NodeId) -> Option<SbrMember> {
        self.unreachable.remove(node);
        self.members.remove(node)
    }

    /// Marks a member unreachable from this side, or reachable again.
    /// Returns whether anything changed.
    pub fn set_unreachable(&mut self, node: &NodeId, unreachable: bool) -> bool {
        if unreachable {
            self.unreachable.insert(node.clone())
        } else {
            self.unreachable.remove(node)
        }
    }

    /// Replaces the table of who observed whom as unreachable. It is what
    /// tells indirectly connected members from a clean partition.
    pub fn set_observations(&mut self, observations: impl IntoIterator<Item = Observation>) {
        self.observations = observations.into_iter().collect();
    }

    /// Replaces the set of members that have seen this node's current
    /// membership state: an unreachable member among them still gets gossip
    /// through a third party, so it is indirectly connected.
    pub fn set_seen_by(&mut self, seen_by: impl IntoIterator<Item = NodeId>) {
        self.seen_by = seen_by.into_iter().collect();
    }

    /// A member, if known.
    pub fn member(&self, node: &NodeId) -> Option<&SbrMember> {
        self.members.get(node)
    }

    /// Every known member, in address order.
    pub fn all_members(&self) -> impl Iterator<Item = &SbrMember> {
        self.members.values()
    }

    /// The members this side cannot reach, whatever their status.
    pub fn unreachable(&self) -> &BTreeSet<NodeId> {
        &self.unreachable
    }

    /// Whether this side cannot reach `node`.
    pub fn is_unreachable(&self, node: &NodeId) -> bool {
        self.unreachable.contains(node)
    }

    /// Whether no unreachable member is Up or Leaving any more (each one
    /// healed, was downed or removed, is exiting, or was only joining): the
    /// measure of instability starts again.
    pub fn all_unreachable_settled(&self) -> bool {
        self.unreachable_count(None, Counting::PLAIN) == 0
    }

    /// The members a decision may still down: all but Down and Exiting.
    pub fn downable(&self) -> BTreeSet<NodeId> {
        self.members
            .values()
            .filter(|m| m.status.is_downable())
            .map(|m| m.node.clone())
            .collect()
    }

    /// Counted members with `role` (all members if `None`), in address order.
    /// Down and Exiting members never count.
    pub(crate) fn counted(&self, role: Option<&str>, how: Counting) -> Vec<&SbrMember> {
        self.members
            .values()
            .filter(|m| m.status.is_downable())
            .filter(|m| how.including_possibly_up || !m.status.is_possibly_up())
            .filter(|m| !(how.excluding_possibly_exiting && m.status == SbrStatus::Leaving))
            .filter(|m| m.has_role(role))
            .collect()
    }

    /// How many counted members with `role` this side reaches.
    pub(crate) fn reachable_count(&self, role: Option<&str>, how: Counting) -> usize {
        let counted = self.counted(role, how);
        counted
            .iter()
            .filter(|m| !self.is_unreachable(&m.node))
            .count()
    }

    /// How many counted members with `role` this side cannot reach.
    pub(crate) fn unreachable_count(&self, role: Option<&str>, how: Counting) -> usize {
        let counted = self.counted(role, how);
        counted
            .iter()
            .filter(|m| self.is_unreachable(&m.node))
            .count()
    }

    /// Members that are unreachable over some links but still connected
    /// through others: they observe a member unreachable and are themselves
    /// observed so (a cycle in the observations), or an observation concerns
    /// a member that has seen this node's current state. Neither happens in
    /// a clean partition or a crash.
    pub fn indirectly_connected(&self) -> BTreeSet<NodeId> {
        let mut found = self.observers_also_observed();
        found.extend(self.connected_through_seen());
        found
    }

    /// Unreachable members that are not indirectly connected.
    pub(crate) fn unreachable_but_not_indirectly_connected(&self) -> BTreeSet<NodeId> {
        let indirect = self.indirectly_connected();
        self.unreachable.difference(&indirect).cloned().collect()
    }

    /// Observers that are themselves observed unreachable.
    pub(crate) fn observers_also_observed(&self) -> BTreeSet<NodeId> {
        let relevant = || self.relevant_observations();
        let observers: BTreeSet<&NodeId> = relevant().map(|(o, _)| o).collect();
        relevant()
            .map(|(_, s)| s)
            .filter(|s| observers.contains(s))
            .cloned()
            .collect()
    }

    /// Both ends of every observation whose subject has seen this node's
    /// current state.
    pub(crate) fn connected_through_seen(&self) -> BTreeSet<NodeId> {
        self.relevant_observations()
            .filter(|(_, subject)| self.seen_by.contains(subject))
            .flat_map(|(o, s)| [o.clone(), s.clone()])
            .collect()
    }

    /// Observations between known members (others are stale or foreign).
    fn relevant_observations(&self) -> impl Iterator<Item = &Observation> {
        self.observations
            .iter()
            .filter(|(o, s)| self.members.contains_key(o) && self.members.contains_key(s))
    }

    /// This view with only the observations `keep` accepts, and as
    /// unreachable exactly their subjects: how the view would look without
    /// the links between indirectly connected members.
    pub(crate) fn filtered(&self, keep: impl Fn(&Observation) -> bool) -> Partition {
        let observations: BTreeSet<Observation> = self
            .relevant_observations()
            .filter(|o| keep(o))
            .cloned()
            .collect();
        Partition {
            members: self.members.clone(),
            unreachable: observations.iter().map(|(_, s)| s.clone()).collect(),
            observations,
            seen_by: self.seen_by.clone(),
        }
    }
}
