//! What a strategy decides, and which members that downs.

use std::collections::BTreeSet;

use crate::node_id::NodeId;
use crate::sbr::partition::{Observation, Partition};
use crate::sbr::strategy::Strategy;

/// A strategy's verdict, as Akka's `DowningStrategy.Decision` (without the
/// lease decisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Down the members this side cannot reach: this side stays.
    DownUnreachable,
    /// Down the members this side reaches, itself included: this side goes.
    DownReachable,
    /// Down every member.
    DownAll,
    /// Down the indirectly connected members, and whatever the strategy
    /// decides about the rest once the links between them are left out.
    DownIndirectlyConnected,
    /// Down only this node: a member quarantined it, so it cannot talk to
    /// that member again under this incarnation.
    DownSelfQuarantinedByRemote,
}

impl Decision {
    /// Whether the decision is about indirectly connected members.
    pub fn is_indirectly_connected(self) -> bool {
        self == Decision::DownIndirectlyConnected
    }
}

/// Leaving out the links between indirectly connected members still left
/// indirectly connected ones: an observation between two members that both
/// are indirectly connected is not seen as such from here (Akka meets this
/// when indirect connections came before a clean partition). The resolver
/// then downs all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("indirectly connected members remain once the links between them are left out")]
pub struct DoubleIndirectlyConnected;

/// The members `decision` downs in `view`, seen from `self_node`; `strategy`
/// decides again about the rest when indirectly connected members are
/// downed. Members already Down or Exiting are never in it.
pub fn nodes_to_down(
    view: &Partition,
    decision: Decision,
    self_node: &NodeId,
    strategy: &Strategy,
) -> Result<BTreeSet<NodeId>, DoubleIndirectlyConnected> {
    let downable = view.downable();
    let nodes = match decision {
        Decision::DownUnreachable => downable
            .into_iter()
            .filter(|n| view.is_unreachable(n))
            .collect(),
        Decision::DownReachable => downable
            .into_iter()
            .filter(|n| !view.is_unreachable(n))
            .collect(),
        Decision::DownAll => downable,
        Decision::DownIndirectlyConnected => {
            let mut wanted = view.indirectly_connected();
            wanted.extend(rest_when_indirectly_connected(
                view, &downable, self_node, strategy,
            )?);
            downable.intersection(&wanted).cloned().collect()
        }
        Decision::DownSelfQuarantinedByRemote => {
            downable.into_iter().filter(|n| n == self_node).collect()
        }
    };
    Ok(nodes)
}

/// What the strategy downs among the members that are not indirectly
/// connected, deciding again on the observations left once those between
/// indirectly connected members are taken out (a clean partition or a crash
/// alongside indirect connections).
fn rest_when_indirectly_connected(
    view: &Partition,
    downable: &BTreeSet<NodeId>,
    self_node: &NodeId,
    strategy: &Strategy,
) -> Result<BTreeSet<NodeId>, DoubleIndirectlyConnected> {
    if view.unreachable_but_not_indirectly_connected().is_empty() {
        return Ok(BTreeSet::new());
    }
    let in_cycle = view.observers_also_observed();
    let through_seen = view.connected_through_seen();
    let keep = |(observer, subject): &Observation| {
        downable.contains(observer)
            && downable.contains(subject)
            && !(in_cycle.contains(observer) && in_cycle.contains(subject))
            && !(through_seen.contains(observer) && through_seen.contains(subject))
    };
    let rest = view.filtered(keep);
    let second = strategy.decide(&rest);
    if second.is_indirectly_connected() {
        return Err(DoubleIndirectlyConnected);
    }
    nodes_to_down(&rest, second, self_node, strategy)
}
