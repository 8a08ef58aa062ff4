//! A snapshot of the membership, as Akka's `CurrentClusterState`.

use super::record::{MemberRecord, UniqueAddress};

/// What this node knows of the cluster at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterState {
    /// Every member (Removed ones excluded), in address order.
    pub members: Vec<MemberRecord>,
    /// The members this node cannot reach, in address order.
    pub unreachable: Vec<MemberRecord>,
    /// The leader this node computes.
    pub leader: Option<UniqueAddress>,
    /// The leader of each role any member has (Akka's `roleLeaderMap`).
    pub role_leaders: std::collections::BTreeMap<String, Option<UniqueAddress>>,
    /// The members that have seen this node's table.
    pub seen_by: Vec<UniqueAddress>,
    /// This node's own record, once it has joined (and until removed).
    pub self_member: Option<MemberRecord>,
}
