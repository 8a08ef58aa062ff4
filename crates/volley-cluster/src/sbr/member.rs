//! What the resolver needs to know of one member: its status, roles and
//! age. The membership layer maps its records onto these.

use std::collections::BTreeSet;

use crate::node_id::NodeId;

/// A member's status, as Akka's `MemberStatus` (Removed is not a status
/// here: a removed member leaves the resolver's view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SbrStatus {
    /// Asked to join; not counted, but downed with a losing side.
    Joining,
    /// Joined without convergence; treated as Joining.
    WeaklyUp,
    /// A full member: counted.
    Up,
    /// Leaving gracefully: counted, though the other side may already see
    /// it Exiting.
    Leaving,
    /// Done leaving: neither counted nor downed.
    Exiting,
    /// Already downed: neither counted nor downed again.
    Down,
}

impl SbrStatus {
    /// Joining and WeaklyUp: members the other side of a partition may
    /// already have moved to Up.
    pub fn is_possibly_up(self) -> bool {
        matches!(self, SbrStatus::Joining | SbrStatus::WeaklyUp)
    }

    /// Whether a decision may still down a member in this status.
    pub fn is_downable(self) -> bool {
        !matches!(self, SbrStatus::Exiting | SbrStatus::Down)
    }
}

/// One member as the split-brain resolver sees it.
///
/// `node` is the member's identity: the membership layer must give the
/// same `NodeId` for one member in every input (its record's identity), since
/// the resolver keys members by it. Its order (host, then port, then uid) is
/// the address order that breaks keep-majority's ties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SbrMember {
    /// The member's identity.
    pub node: NodeId,
    /// Its status.
    pub status: SbrStatus,
    /// Its roles.
    pub roles: BTreeSet<String>,
    /// The order in which it became Up: lower is older. Ignored for Joining
    /// and WeaklyUp members, which keep-oldest never counts as oldest.
    pub up_number: u32,
}

impl SbrMember {
    /// A member with no roles.
    pub fn new(node: NodeId, status: SbrStatus, up_number: u32) -> Self {
        Self {
            node,
            status,
            roles: BTreeSet::new(),
            up_number,
        }
    }

    /// The same member with these roles.
    pub fn with_roles<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.roles = roles.into_iter().map(Into::into).collect();
        self
    }

    /// The same member in another status.
    pub fn with_status(mut self, status: SbrStatus) -> Self {
        self.status = status;
        self
    }

    /// Whether it has `role`, or whether no role is asked for.
    pub fn has_role(&self, role: Option<&str>) -> bool {
        role.is_none_or(|r| self.roles.contains(r))
    }

    /// The key keep-oldest sorts by: the lowest up-number first, the address
    /// breaking a tie (as Akka's age ordering).
    pub(crate) fn age_key(&self) -> (u32, &NodeId) {
        (self.up_number, &self.node)
    }
}
