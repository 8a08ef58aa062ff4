//! What a node knows of the membership, shared between the core and the
//! custom-broadcast handler foca owns.
//!
//! foca hands received custom broadcasts to its handler and asks it at
//! once whether each is new (to keep spreading it) or stale; only the
//! table can answer, and foca gives no access to its handler afterwards,
//! so the table lives behind a mutex both hold. It is locked only between
//! foca calls or inside one, never across one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use foca::{BroadcastHandler, Invalidates};

use super::record::{MemberRecord, UniqueAddress};
use super::status::MemberStatus;
use super::table::{MemberTable, Merged};
use super::wire::{self, Fnv1a, Item, Seen};
use crate::codec::CodecError;
use crate::node_id::NodeId;
use crate::receptionist::{OwnerSet, ServiceBounds, ServiceRefused, ServiceRegistry};

/// A member's status changed in this node's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatusChange {
    /// The record now (for a removal, the last record with status Removed).
    pub(crate) record: MemberRecord,
    /// The status before, `None` for a member new to the table.
    pub(crate) previous: Option<MemberStatus>,
}

/// The member table, who has seen which table, and the status changes
/// not yet turned into events.
#[derive(Debug, Default)]
pub(crate) struct Knowledge {
    pub(crate) now: Duration,
    pub(crate) prune_after: Duration,
    pub(crate) table: MemberTable,
    pub(crate) seen: BTreeMap<UniqueAddress, Seen>,
    /// The hash of `seen`, computed again only after a change.
    seen_hash: Option<u64>,
    pub(crate) changes: Vec<StatusChange>,
    /// Exiting members that confirmed their exiting tasks are done
    /// (Akka's `ExitingConfirmed`), until they are removed.
    pub(crate) exiting_confirmed: BTreeSet<UniqueAddress>,
    /// The cluster receptionist's registry, whose owners are members.
    pub(crate) services: ServiceRegistry,
    pub(crate) service_bounds: ServiceBounds,
    /// Records, tombstones and seen entries refused because the table
    /// (or the seen entries of non-members) was full.
    pub(crate) refused_full: u64,
}

/// The most seen entries kept for nodes the table does not hold (a
/// joining node's digest brings one before its record exists), beyond
/// one per member.
const STRANGERS_SEEN: usize = 64;

impl Knowledge {
    /// Merges a record; true if the table changed.
    pub(crate) fn apply_record(&mut self, record: MemberRecord) -> bool {
        let merged = self.table.merge(record.clone(), self.now);
        if merged == Merged::Full {
            self.refused_full += 1;
        }
        self.note(merged, record)
    }

    /// Merges a tombstone removed `ago`; true if the table changed.
    pub(crate) fn apply_tombstone(&mut self, member: UniqueAddress, ago: Duration) -> bool {
        let merged = self
            .table
            .merge_tombstone(member, ago, self.now, self.prune_after);
        match merged {
            Merged::New {
                previous: Some(previous),
            } => self.note_removed(previous),
            Merged::New { previous: None } => true,
            Merged::Stale => false,
            Merged::Full => {
                self.refused_full += 1;
                false
            }
        }
    }

    /// Keeps `seen` for `member` if it is newer; true if it was. A node
    /// the table does not hold gets an entry only while there are fewer
    /// than [`STRANGERS_SEEN`] entries beyond the members' (counted in
    /// `refused_full` otherwise); [`Knowledge::forget_strangers_seen`]
    /// drops them again.
    pub(crate) fn apply_seen(&mut self, member: UniqueAddress, seen: Seen) -> bool {
        if self.table.is_removed(&member) {
            return false;
        }
        match self.seen.get(&member) {
            Some(known) if known.version >= seen.version => false,
            Some(_) => self.keep_seen(member, seen),
            None if self.table.get(&member).is_some() => self.keep_seen(member, seen),
            None if self.seen.len() < self.table.len() + STRANGERS_SEEN => {
                self.keep_seen(member, seen)
            }
            None => {
                self.refused_full += 1;
                false
            }
        }
    }

    fn keep_seen(&mut self, member: UniqueAddress, seen: Seen) -> bool {
        self.seen.insert(member, seen);
        self.seen_hash = None;
        true
    }

    /// Drops the seen entries of nodes the table does not hold (run on
    /// every tick): a joining node's digest brings its entry again each
    /// tick until its record is in, and one that never joins is forgotten.
    pub(crate) fn forget_strangers_seen(&mut self) {
        let before = self.seen.len();
        let (table, services) = (&self.table, &self.services);
        self.seen
            .retain(|member, _| table.get(member).is_some() || services.is_me(member));
        if self.seen.len() != before {
            self.seen_hash = None;
        }
    }

    /// Notes that `member` confirmed its exiting tasks; true if that is
    /// news. A confirmation of a member removed or not yet Exiting here is
    /// kept only while the member is in the table (a confirmation can
    /// overtake the record that made the member Exiting).
    pub(crate) fn apply_exiting_confirmed(&mut self, member: UniqueAddress) -> bool {
        let known = self
            .table
            .get(&member)
            .is_some_and(|record| record.status >= MemberStatus::Leaving);
        known && self.exiting_confirmed.insert(member)
    }

    /// Merges `owner`'s set of services; true if it was newer. The set of
    /// a member removed (tombstoned) or not yet known is dropped as stale:
    /// owners are members, which bounds the registry, and anti-entropy
    /// brings the set again once the member is known.
    pub(crate) fn apply_services(
        &mut self,
        owner: &UniqueAddress,
        set: OwnerSet,
    ) -> Result<bool, ServiceRefused> {
        let known = self.services.is_me(owner) || self.table.get(owner).is_some();
        if !known || self.table.is_removed(owner) {
            return Ok(false);
        }
        self.service_bounds.check_set(&set)?;
        Ok(self.services.merge(owner, set))
    }

    /// A hash of the seen-set, for the anti-entropy digest.
    pub(crate) fn seen_hash(&mut self) -> u64 {
        if let Some(hash) = self.seen_hash {
            return hash;
        }
        let mut hasher = Fnv1a::default();
        for (member, seen) in &self.seen {
            hasher.write(member.host.as_bytes());
            hasher.write(&member.port.to_le_bytes());
            hasher.write(&member.uid.to_le_bytes());
            hasher.write(&seen.version.to_le_bytes());
        }
        let hash = hasher.finish();
        self.seen_hash = Some(hash);
        hash
    }

    fn note(&mut self, merged: Merged, record: MemberRecord) -> bool {
        let Merged::New { previous } = merged else {
            return false;
        };
        if record.status == MemberStatus::Removed {
            return match previous {
                Some(previous) => self.note_removed(previous),
                None => true,
            };
        }
        let member = record.unique_address();
        let now = self.table.get(&member).cloned().unwrap_or(record);
        let previous = previous.map(|previous| previous.status);
        if previous != Some(now.status) {
            self.changes.push(StatusChange {
                record: now,
                previous,
            });
        }
        true
    }

    fn note_removed(&mut self, previous: MemberRecord) -> bool {
        if self.seen.remove(&previous.unique_address()).is_some() {
            self.seen_hash = None;
        }
        self.services.remove_owner(&previous.unique_address());
        self.exiting_confirmed.remove(&previous.unique_address());
        self.changes.push(StatusChange {
            record: previous.with_status(MemberStatus::Removed),
            previous: Some(previous.status),
        });
        true
    }
}

/// The core's handle on the shared knowledge.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedKnowledge(Arc<Mutex<Knowledge>>);

impl SharedKnowledge {
    /// Locks it; a poisoned lock (a panic elsewhere while it was held)
    /// still gives the data, which every step leaves consistent.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Knowledge> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What a pending broadcast is about, so that a newer one replaces it in
/// foca's backlog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ItemKey {
    Record(UniqueAddress, MemberStatus, u32),
    Seen(UniqueAddress, u64),
    Services(UniqueAddress, u64),
    ExitingConfirmed(UniqueAddress),
}

impl Invalidates for ItemKey {
    /// foca asks this of every pending item each time one is added, so
    /// the members are told apart by uid first, not by their host names.
    fn invalidates(&self, other: &Self) -> bool {
        match (self, other) {
            (ItemKey::Record(a, status, up), ItemKey::Record(b, other_status, other_up)) => {
                same_member(a, b) && (status, up) >= (other_status, other_up)
            }
            (ItemKey::Seen(a, version), ItemKey::Seen(b, other_version))
            | (ItemKey::Services(a, version), ItemKey::Services(b, other_version)) => {
                same_member(a, b) && version >= other_version
            }
            (ItemKey::ExitingConfirmed(a), ItemKey::ExitingConfirmed(b)) => same_member(a, b),
            _ => false,
        }
    }
}

/// `a == b`, cheapest fields first.
fn same_member(a: &UniqueAddress, b: &UniqueAddress) -> bool {
    a.uid == b.uid && a.port == b.port && a.host == b.host
}

impl BroadcastHandler<NodeId> for SharedKnowledge {
    type Key = ItemKey;
    type Error = CodecError;

    fn receive_item(
        &mut self,
        data: &[u8],
        sender: Option<&NodeId>,
    ) -> Result<Option<ItemKey>, CodecError> {
        let item = wire::decode_item(data)?;
        let mut knowledge = self.lock();
        let (key, new) = match item {
            Item::Record(record) => (
                ItemKey::Record(record.unique_address(), record.status, record.up_number),
                knowledge.apply_record(record),
            ),
            Item::Seen { member, seen } => (
                ItemKey::Seen(member.clone(), seen.version),
                knowledge.apply_seen(member, seen),
            ),
            Item::Services { owner, set } => (
                ItemKey::Services(owner.clone(), set.version),
                knowledge.apply_services(&owner, set)?,
            ),
            Item::ExitingConfirmed(member) => (
                ItemKey::ExitingConfirmed(member.clone()),
                knowledge.apply_exiting_confirmed(member),
            ),
        };
        // This node's own items (no sender) are applied before they are
        // added, and must be spread all the same.
        Ok((new || sender.is_none()).then_some(key))
    }
}

#[cfg(test)]
#[path = "knowledge_tests.rs"]
mod tests;
