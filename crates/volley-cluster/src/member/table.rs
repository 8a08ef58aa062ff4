//! The member table: a record per member and a tombstone per removed
//! member, merged as a join-semilattice (design §3.2).
//!
//! Records and tombstones come from other members' gossip, which may name
//! members that never existed (a faulty or hostile peer past the
//! handshake); the table holds at most `max_members` of each, so no peer
//! can grow it without end. A record or tombstone of a member new to a
//! full table is refused; the removal of a member the table holds always
//! goes through, and a full set of tombstones then forgets its oldest.

use std::collections::BTreeMap;
use std::time::Duration;

use super::record::{MemberRecord, UniqueAddress};
use super::status::MemberStatus;
use super::wire;

/// What merging one record did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Merged {
    /// Nothing new: the table already held as much.
    Stale,
    /// A member new to the table, refused: the table holds `max_members`
    /// records (or tombstones, for a removed one) already.
    Full,
    /// The table changed; `previous` is the member's record before, `None`
    /// if the table did not hold the member.
    New {
        /// The record before.
        previous: Option<MemberRecord>,
    },
}

/// The most records, and the most tombstones, a table holds by default.
pub const DEFAULT_MAX_MEMBERS: usize = 10_000;

/// Every member this node knows of, and the members removed lately.
#[derive(Debug, Clone)]
pub struct MemberTable {
    records: BTreeMap<UniqueAddress, MemberRecord>,
    /// Removed members and when they were removed, on this node's clock.
    tombstones: BTreeMap<UniqueAddress, Duration>,
    /// The hash of `records`, computed again only after a change.
    hash: Option<u64>,
    /// The most records, and the most tombstones, held.
    max_members: usize,
}

impl Default for MemberTable {
    fn default() -> Self {
        Self::with_max_members(DEFAULT_MAX_MEMBERS)
    }
}

impl MemberTable {
    /// An empty table holding at most `max_members` records and as many
    /// tombstones.
    pub fn with_max_members(max_members: usize) -> Self {
        Self {
            records: BTreeMap::new(),
            tombstones: BTreeMap::new(),
            hash: None,
            max_members,
        }
    }

    /// The members, in address order (Removed ones are tombstones).
    pub fn records(&self) -> impl Iterator<Item = &MemberRecord> {
        self.records.values()
    }

    /// The record of `member`, if it is a member.
    pub fn get(&self, member: &UniqueAddress) -> Option<&MemberRecord> {
        self.records.get(member)
    }

    /// How many members the table holds (Removed ones not counted).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the table holds no member.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Whether `member` was removed (and its tombstone not yet pruned).
    pub fn is_removed(&self, member: &UniqueAddress) -> bool {
        self.tombstones.contains_key(member)
    }

    /// The removed members and when they were removed.
    pub(crate) fn tombstones(&self) -> impl Iterator<Item = (&UniqueAddress, Duration)> {
        self.tombstones.iter().map(|(member, at)| (member, *at))
    }

    /// Merges one record in at `now`: the greater status wins, a Removed
    /// record leaves a tombstone, and a tombstoned member stays removed.
    pub(crate) fn merge(&mut self, record: MemberRecord, now: Duration) -> Merged {
        let member = record.unique_address();
        if self.tombstones.contains_key(&member) {
            return Merged::Stale;
        }
        if record.status == MemberStatus::Removed {
            return self.bury(member, now);
        }
        let merged = match self.records.get(&member) {
            Some(known) => {
                let merged = known.merged(&record);
                if merged == *known {
                    return Merged::Stale;
                }
                merged
            }
            None if self.records.len() >= self.max_members => return Merged::Full,
            None => record,
        };
        self.hash = None;
        let previous = self.records.insert(member, merged);
        Merged::New { previous }
    }

    /// Merges a tombstone learnt from another node, removed `ago` before
    /// `now`; one older than `prune_after` is ignored, so that a pruned
    /// tombstone does not come back from a node that prunes later.
    pub(crate) fn merge_tombstone(
        &mut self,
        member: UniqueAddress,
        ago: Duration,
        now: Duration,
        prune_after: Duration,
    ) -> Merged {
        if ago >= prune_after || self.tombstones.contains_key(&member) {
            return Merged::Stale;
        }
        self.bury(member, now.saturating_sub(ago))
    }

    /// Removes `member`, leaving a tombstone dated `removed_at`: refused
    /// for a member the table does not hold when the tombstones are full;
    /// for one it holds, the oldest tombstone makes room.
    fn bury(&mut self, member: UniqueAddress, removed_at: Duration) -> Merged {
        let full = self.tombstones.len() >= self.max_members;
        if full && !self.records.contains_key(&member) {
            return Merged::Full;
        }
        if full {
            self.forget_oldest_tombstone();
        }
        self.tombstones.insert(member.clone(), removed_at);
        self.hash = None;
        let previous = self.records.remove(&member);
        Merged::New { previous }
    }

    fn forget_oldest_tombstone(&mut self) {
        let oldest = self
            .tombstones
            .iter()
            .min_by_key(|(_, removed_at)| **removed_at)
            .map(|(member, _)| member.clone());
        if let Some(oldest) = oldest {
            self.tombstones.remove(&oldest);
        }
    }

    /// Forgets tombstones older than `prune_after`; returns how many.
    pub(crate) fn prune(&mut self, now: Duration, prune_after: Duration) -> usize {
        let before = self.tombstones.len();
        self.tombstones
            .retain(|_, removed_at| now.saturating_sub(*removed_at) < prune_after);
        before - self.tombstones.len()
    }

    /// A hash of the records (not the tombstones, whose pruning times
    /// differ from node to node): equal tables have equal hashes on every
    /// node, whatever the build, since it hashes the wire encoding.
    pub fn hash(&mut self) -> u64 {
        if let Some(hash) = self.hash {
            return hash;
        }
        let mut hasher = wire::Fnv1a::default();
        let mut bytes = Vec::new();
        for record in self.records.values() {
            bytes.clear();
            wire::put_record(&mut bytes, record);
            hasher.write(&bytes);
        }
        let hash = hasher.finish();
        self.hash = Some(hash);
        hash
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
