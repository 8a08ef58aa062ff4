//! A member's status, as Akka's `MemberStatus` (design §3.1).

/// Where a member is in its life in the cluster. The order is the order
/// a member moves through (WeaklyUp may be skipped, Down can follow any
/// status, Removed follows Down or Exiting), so merging two views keeps
/// the greater status. The variants' order is that order (`Ord` derives
/// from it); their wire codes are fixed apart from it ([`Self::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemberStatus {
    /// Joined the SWIM group and announced itself; waits for the leader.
    Joining,
    /// Moved on by the leader while convergence was out of reach (a
    /// member unreachable) for `allow_weakly_up_members`: it takes part
    /// in messaging and the receptionist, but is not counted where
    /// convergence or a quorum matters and hosts no singleton. The
    /// leader moves it Up at the next convergence.
    WeaklyUp,
    /// Moved up by the leader at convergence: a full member.
    Up,
    /// Asked to leave (by itself); the leader moves it on.
    Leaving,
    /// Moved on by the leader at convergence; removed next.
    Exiting,
    /// Downed (by the split-brain resolver or by hand); removed next.
    Down,
    /// Gone: only a tombstone of it is kept, until pruned.
    Removed,
}

impl MemberStatus {
    /// The status's byte on the wire.
    pub(crate) fn code(self) -> u8 {
        match self {
            MemberStatus::Joining => 0,
            MemberStatus::WeaklyUp => 1,
            MemberStatus::Up => 2,
            MemberStatus::Leaving => 3,
            MemberStatus::Exiting => 4,
            MemberStatus::Down => 5,
            MemberStatus::Removed => 6,
        }
    }

    /// The status a wire byte stands for, if any.
    pub(crate) fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => MemberStatus::Joining,
            1 => MemberStatus::WeaklyUp,
            2 => MemberStatus::Up,
            3 => MemberStatus::Leaving,
            4 => MemberStatus::Exiting,
            5 => MemberStatus::Down,
            6 => MemberStatus::Removed,
            _ => return None,
        })
    }

    /// Whether a member in this status may be the leader outright (Akka's
    /// `leaderMemberStatus`), and must have seen the table for convergence.
    pub(crate) fn counts_for_convergence(self) -> bool {
        matches!(self, MemberStatus::Up | MemberStatus::Leaving)
    }

    /// Whether the leader has not moved a member in this status Up yet
    /// (Joining or WeaklyUp): the other side of a partition may already
    /// have, and the leader moves it Up at its next convergence.
    pub(crate) fn is_not_yet_up(self) -> bool {
        matches!(self, MemberStatus::Joining | MemberStatus::WeaklyUp)
    }

    /// Whether an unreachable member in this status still lets the
    /// cluster converge (Akka's `convergenceSkipUnreachableWithMemberStatus`).
    pub(crate) fn skipped_when_unreachable(self) -> bool {
        matches!(self, MemberStatus::Down | MemberStatus::Exiting)
    }
}
