//! The downing strategies, as pure functions of a [`Partition`].

use std::collections::BTreeSet;

use crate::node_id::NodeId;
use crate::sbr::decision::{nodes_to_down, Decision, DoubleIndirectlyConnected};
use crate::sbr::partition::{Counting, Partition};
use crate::sbr::{keep_majority, keep_oldest};

/// A downing strategy with its settings (validated, see
/// [`SbrSettings::strategy`](crate::sbr::SbrSettings::strategy)).
///
/// Each counts only Up and Leaving members (of `role`, if given); Joining
/// and WeaklyUp members are not counted but are downed with a losing side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    /// Keep the side with more members; on equal sides, the side with the
    /// member of the lowest address.
    KeepMajority {
        /// Count only members with this role.
        role: Option<String>,
    },
    /// Keep a side with at least `quorum_size` members; down all if the
    /// cluster has more than `2 * quorum_size - 1` members, since both sides
    /// could then have a quorum.
    StaticQuorum {
        /// The fewest members a side needs to stay. At least 1.
        quorum_size: usize,
        /// Count only members with this role.
        role: Option<String>,
    },
    /// Keep the side with the oldest member (the lowest up-number).
    KeepOldest {
        /// An oldest member cut off from all others (with at least two
        /// others) downs itself and the others stay.
        down_if_alone: bool,
        /// Look only at members with this role.
        role: Option<String>,
    },
    /// Down every member, whatever the partition.
    DownAll,
}

impl Strategy {
    /// The strategy's verdict on `view`. Meaningful when some member is
    /// unreachable.
    pub fn decide(&self, view: &Partition) -> Decision {
        match self {
            Strategy::KeepMajority { role } => keep_majority::decide(view, role.as_deref()),
            Strategy::StaticQuorum { quorum_size, role } => {
                static_quorum(view, *quorum_size, role.as_deref())
            }
            Strategy::KeepOldest {
                down_if_alone,
                role,
            } => keep_oldest::decide(view, *down_if_alone, role.as_deref()),
            Strategy::DownAll => Decision::DownAll,
        }
    }

    /// The members `decision` downs, seen from `self_node`.
    pub fn nodes_to_down(
        &self,
        view: &Partition,
        decision: Decision,
        self_node: &NodeId,
    ) -> Result<BTreeSet<NodeId>, DoubleIndirectlyConnected> {
        nodes_to_down(view, decision, self_node, self)
    }

    /// For static-quorum: whether the cluster has grown past `2 *
    /// quorum_size - 1` counted members, so a partition downs all. The
    /// membership layer warns when a member comes Up and this holds.
    pub fn too_many_for_quorum(&self, view: &Partition) -> bool {
        match self {
            Strategy::StaticQuorum { quorum_size, role } => {
                too_many(view, *quorum_size, role.as_deref())
            }
            _ => false,
        }
    }

    /// The strategy's name, as in the settings.
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::KeepMajority { .. } => "keep-majority",
            Strategy::StaticQuorum { .. } => "static-quorum",
            Strategy::KeepOldest { .. } => "keep-oldest",
            Strategy::DownAll => "down-all",
        }
    }
}

fn static_quorum(view: &Partition, quorum_size: usize, role: Option<&str>) -> Decision {
    if too_many(view, quorum_size, role) {
        Decision::DownAll
    } else if !view.indirectly_connected().is_empty() {
        Decision::DownIndirectlyConnected
    } else if view.reachable_count(role, Counting::PLAIN) >= quorum_size {
        Decision::DownUnreachable
    } else {
        Decision::DownReachable
    }
}

fn too_many(view: &Partition, quorum_size: usize, role: Option<&str>) -> bool {
    view.counted(role, Counting::PLAIN).len() > quorum_size.saturating_mul(2).saturating_sub(1)
}
