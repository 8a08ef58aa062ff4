//! The leader, convergence and the leader's actions (design §3.4): pure
//! functions of one node's table, its seen-set and its reachability.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::record::{MemberRecord, UniqueAddress};
use super::status::MemberStatus;
use super::table::MemberTable;
use super::wire::Seen;

/// Akka's `leaderOf`: the first member by address among reachable members
/// that are Up or Leaving; if there is none, the first reachable member,
/// Down and Exiting ones last. This node counts as reachable.
pub(crate) fn leader_of(
    table: &MemberTable,
    unreachable: &BTreeSet<UniqueAddress>,
    me: &UniqueAddress,
) -> Option<UniqueAddress> {
    leader_among(table, unreachable, me, |_| true)
}

/// Akka's `roleLeaderOf`: [`leader_of`] among the members with each role
/// any member has, by role.
pub(crate) fn role_leaders(
    table: &MemberTable,
    unreachable: &BTreeSet<UniqueAddress>,
    me: &UniqueAddress,
) -> BTreeMap<String, Option<UniqueAddress>> {
    let roles: BTreeSet<&String> = table.records().flat_map(|r| &r.roles).collect();
    roles
        .into_iter()
        .map(|role| {
            let leader = leader_among(table, unreachable, me, |r| r.roles.contains(role));
            (role.clone(), leader)
        })
        .collect()
}

fn leader_among(
    table: &MemberTable,
    unreachable: &BTreeSet<UniqueAddress>,
    me: &UniqueAddress,
    eligible: impl Fn(&MemberRecord) -> bool,
) -> Option<UniqueAddress> {
    // This runs after every input: with every member reachable (the
    // usual case) no record's address is built.
    let reachable = || {
        table.records().filter(|record| {
            eligible(record)
                && (unreachable.is_empty() || {
                    let member = record.unique_address();
                    member == *me || !unreachable.contains(&member)
                })
        })
    };
    let first_up = reachable().find(|record| record.status.counts_for_convergence());
    first_up
        .or_else(|| reachable().min_by_key(|record| record.status.skipped_when_unreachable()))
        .map(MemberRecord::unique_address)
}

/// Whether this node sees convergence: every reachable Up or Leaving
/// member has seen the table this node holds (its hash is `own_hash`),
/// and every unreachable member is Down or Exiting.
///
/// While no member is Up or Leaving, every reachable Joining (or
/// WeaklyUp) member must have seen it too. Records travel one by one, so
/// a node can become a member having heard of another joiner but not yet of the first seed
/// that formed the cluster; as the leader of that partial table (all
/// Joining, so trivially converged by Akka's rule) it would move itself
/// and the joiner Up beside the first seed's own move, a second cluster
/// with a second up-number 1. The joiner it heard of holds the first
/// seed's record, so its table differs and nothing moves until they agree.
pub(crate) fn converged(
    table: &MemberTable,
    seen: &BTreeMap<UniqueAddress, Seen>,
    unreachable: &BTreeSet<UniqueAddress>,
    me: &UniqueAddress,
    own_hash: u64,
) -> bool {
    let forming = !table
        .records()
        .any(|record| record.status.counts_for_convergence());
    let counts = |status: MemberStatus| {
        status.counts_for_convergence() || (forming && status.is_not_yet_up())
    };
    table.records().all(|record| {
        let member = record.unique_address();
        if member == *me {
            return true;
        }
        if unreachable.contains(&member) {
            return record.status.skipped_when_unreachable();
        }
        !counts(record.status) || seen.get(&member).is_some_and(|seen| seen.hash == own_hash)
    })
}

/// Why the leader may remove an Exiting member (Akka's leader removes one
/// that confirmed, `ExitingConfirmed`, or that is unreachable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitingRemoval {
    /// It confirmed it finished its exiting tasks (singleton hand-over,
    /// shard hand-off).
    Confirmed,
    /// It is unreachable: it cannot confirm, and stopped or is cut off.
    Unreachable,
    /// It has been Exiting, as this leader saw it, for longer than
    /// `exiting_confirm_timeout` without confirming (volley's bound; an
    /// Akka leader waits for the confirmation or unreachability alone).
    TimedOut,
}

/// What the leader knows of its Exiting members' progress.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExitingProgress<'a> {
    /// The members that confirmed.
    pub(crate) confirmed: &'a BTreeSet<UniqueAddress>,
    /// The members this node cannot reach.
    pub(crate) unreachable: &'a BTreeSet<UniqueAddress>,
    /// Since when this node has seen each Exiting member Exiting.
    pub(crate) since: &'a BTreeMap<UniqueAddress, Duration>,
    /// Now, on the core's clock.
    pub(crate) now: Duration,
    /// How long an Exiting member may take to confirm.
    pub(crate) timeout: Duration,
}

impl ExitingProgress<'_> {
    /// Whether (and why) the Exiting `member` may be removed now.
    pub(crate) fn removal(&self, member: &UniqueAddress) -> Option<ExitingRemoval> {
        if self.confirmed.contains(member) {
            Some(ExitingRemoval::Confirmed)
        } else if self.unreachable.contains(member) {
            Some(ExitingRemoval::Unreachable)
        } else {
            let since = self.since.get(member)?;
            (self.now >= since.saturating_add(self.timeout)).then_some(ExitingRemoval::TimedOut)
        }
    }
}

/// Whether the table holds enough members for the leader to move Joining
/// ones Up (Akka's `isMinNrOfMembersFulfilled`): `min_nr_of_members` in
/// all, and for each role of `per_role` that many members with the role.
pub(crate) fn min_nr_fulfilled(
    table: &MemberTable,
    min_nr_of_members: usize,
    per_role: &BTreeMap<String, usize>,
) -> bool {
    let with_role = |role: &String| table.records().filter(|r| r.roles.contains(role)).count();
    table.len() >= min_nr_of_members && per_role.iter().all(|(role, min)| with_role(role) >= *min)
}

/// What the leader changes at convergence: Joining and WeaklyUp to Up
/// (when `may_move_up`, [`min_nr_fulfilled`]), with up-numbers in address
/// order after the greatest given; Leaving to Exiting; Down to Removed,
/// and Exiting to Removed once `exiting` allows it (confirmed, unreachable or timed
/// out). Each member moves one step a round, so every step is seen by all
/// before the next.
pub(crate) fn leader_actions(
    table: &MemberTable,
    may_move_up: bool,
    exiting: &ExitingProgress<'_>,
) -> Vec<MemberRecord> {
    let mut next_up = table
        .records()
        .map(|record| record.up_number)
        .max()
        .unwrap_or(0);
    let mut changes = Vec::new();
    for record in table.records() {
        let next = match record.status {
            MemberStatus::Joining | MemberStatus::WeaklyUp if may_move_up => {
                next_up += 1;
                MemberRecord {
                    up_number: next_up,
                    ..record.with_status(MemberStatus::Up)
                }
            }
            MemberStatus::Leaving => record.with_status(MemberStatus::Exiting),
            MemberStatus::Exiting if exiting.removal(&record.unique_address()).is_some() => {
                record.with_status(MemberStatus::Removed)
            }
            MemberStatus::Down => record.with_status(MemberStatus::Removed),
            _ => continue,
        };
        changes.push(next);
    }
    changes
}

/// What the leader knows while it sees no convergence, for Akka's
/// `allow-weakly-up-members`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WithoutConvergence<'a> {
    /// The members this node cannot reach.
    pub(crate) unreachable: &'a BTreeSet<UniqueAddress>,
    /// This node, the leader.
    pub(crate) me: &'a UniqueAddress,
    /// Since when the leader has seen no convergence.
    pub(crate) since: Duration,
    /// Now, on the core's clock.
    pub(crate) now: Duration,
    /// How long without convergence before Joining members move to
    /// WeaklyUp; `None`: never.
    pub(crate) weakly_up_after: Option<Duration>,
    /// Whether the table holds enough members ([`min_nr_fulfilled`]).
    pub(crate) may_move_up: bool,
}

/// What the leader changes without convergence (Akka's
/// `moveJoiningToWeaklyUp`): once it has seen none for `weakly_up_after`,
/// every Joining member it can reach goes to WeaklyUp, its up-number
/// still 0 (it gets one when it moves Up at convergence). Only a leader
/// that is itself Up or Leaving moves anyone. One picked among members
/// not yet Up (a cluster still forming, or a joiner cut off from every
/// Up member) was not admitted itself: records reach it one by one, so
/// its table may lack members, and it counts as reachable the members
/// its SWIM group has not heard of yet (for `probe_period` plus
/// `suspect_to_down_after`, `core/unmonitored.rs`).
/// Akka's leader has no such condition.
pub(crate) fn weakly_up_moves(
    table: &MemberTable,
    without: &WithoutConvergence<'_>,
) -> Vec<MemberRecord> {
    let due = without
        .weakly_up_after
        .is_some_and(|after| without.now >= without.since.saturating_add(after));
    let leader_up = table
        .get(without.me)
        .is_some_and(|own| own.status.counts_for_convergence());
    if !due || !leader_up || !without.may_move_up {
        return Vec::new();
    }
    table
        .records()
        .filter(|record| record.status == MemberStatus::Joining)
        .filter(|record| !without.unreachable.contains(&record.unique_address()))
        .map(|record| record.with_status(MemberStatus::WeaklyUp))
        .collect()
}

#[cfg(test)]
#[path = "leader_tests.rs"]
mod tests;
