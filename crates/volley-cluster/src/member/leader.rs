//! The leader, convergence and the leader's actions (design §3.4): pure
//! functions of one node's table, its seen-set and its reachability.

use std::collections::{BTreeMap, BTreeSet};

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
    // This runs after every input: with every member reachable (the
    // usual case) no record's address is built.
    let reachable = || {
        table.records().filter(|record| {
            unreachable.is_empty() || {
                let member = record.unique_address();
                member == *me || !unreachable.contains(&member)
            }
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
/// While no member is Up or Leaving, every reachable Joining member must
/// have seen it too. Records travel one by one, so a node can become a
/// member having heard of another joiner but not yet of the first seed
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
        status.counts_for_convergence() || (forming && status == MemberStatus::Joining)
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

/// What the leader changes at convergence: Joining to Up (once the table
/// holds `min_nr_of_members`), with up-numbers in address order after the
/// greatest given; Leaving to Exiting; Exiting and Down to Removed. Each
/// member moves one step a round, so every step is seen by all before the
/// next.
pub(crate) fn leader_actions(table: &MemberTable, min_nr_of_members: usize) -> Vec<MemberRecord> {
    let may_move_up = table.len() >= min_nr_of_members;
    let mut next_up = table
        .records()
        .map(|record| record.up_number)
        .max()
        .unwrap_or(0);
    let mut changes = Vec::new();
    for record in table.records() {
        let next = match record.status {
            MemberStatus::Joining if may_move_up => {
                next_up += 1;
                MemberRecord {
                    up_number: next_up,
                    ..record.with_status(MemberStatus::Up)
                }
            }
            MemberStatus::Leaving => record.with_status(MemberStatus::Exiting),
            MemberStatus::Exiting | MemberStatus::Down => record.with_status(MemberStatus::Removed),
            _ => continue,
        };
        changes.push(next);
    }
    changes
}

#[cfg(test)]
#[path = "leader_tests.rs"]
mod tests;
