//! The replicated registry: every member's owner set (design §5).
//!
//! It is a map of max-registers, one per owner, so merging is
//! commutative, associative and idempotent: nodes that received the same
//! sets hold the same registry whatever the order. An owner's set is
//! dropped when the member is removed; the member table's tombstone of
//! that incarnation then keeps late copies from bringing it back (the
//! caller checks it before merging).

use std::collections::BTreeMap;

use super::entry::{ServiceChange, ServiceEntry};
use super::owner_set::OwnerSet;
use crate::member::wire::Fnv1a;
use crate::member::UniqueAddress;

/// Every member's services, as this node knows them.
#[derive(Debug, Clone, Default)]
pub struct ServiceRegistry {
    /// This node, whose own changes are not reported as [`ServiceChange`]s
    /// (its services are in its local receptionist already).
    me: Option<UniqueAddress>,
    sets: BTreeMap<UniqueAddress, OwnerSet>,
    /// The hash of the `(owner, version)` pairs, computed again only after
    /// a change.
    hash: Option<u64>,
    /// Other members' services that appeared or left, not yet taken.
    changes: Vec<ServiceChange>,
}

impl ServiceRegistry {
    /// An empty registry of the node `me`.
    pub fn new(me: UniqueAddress) -> Self {
        Self {
            me: Some(me),
            ..Self::default()
        }
    }

    /// Keeps `set` for `owner` if it is newer than the one held; true if
    /// it was.
    pub fn merge(&mut self, owner: &UniqueAddress, set: OwnerSet) -> bool {
        let held = self.sets.get(owner);
        if held.is_some_and(|held| held.version >= set.version) {
            return false;
        }
        let empty = OwnerSet::default();
        let changes = self.diff(owner, held.unwrap_or(&empty), &set);
        self.changes.extend(changes);
        self.sets.insert(owner.clone(), set);
        self.hash = None;
        true
    }

    /// Drops `owner`'s set (the member was removed); true if there was one.
    pub fn remove_owner(&mut self, owner: &UniqueAddress) -> bool {
        let Some(set) = self.sets.remove(owner) else {
            return false;
        };
        let changes = self.diff(owner, &set, &OwnerSet::default());
        self.changes.extend(changes);
        self.hash = None;
        true
    }

    /// Whether `owner` is this node.
    pub fn is_me(&self, owner: &UniqueAddress) -> bool {
        self.me.as_ref() == Some(owner)
    }

    /// This node's set (empty before its first registration).
    pub(crate) fn own_set(&self) -> OwnerSet {
        self.me
            .as_ref()
            .and_then(|me| self.sets.get(me))
            .cloned()
            .unwrap_or_default()
    }

    /// `owner`'s set, if this node holds one.
    pub fn get(&self, owner: &UniqueAddress) -> Option<&OwnerSet> {
        self.sets.get(owner)
    }

    /// Every owner and its set, in owner order.
    pub fn sets(&self) -> impl Iterator<Item = (&UniqueAddress, &OwnerSet)> {
        self.sets.iter()
    }

    /// Every service of every owner.
    pub fn entries(&self) -> impl Iterator<Item = (&UniqueAddress, &ServiceEntry)> {
        self.sets
            .iter()
            .flat_map(|(owner, set)| set.entries.iter().map(move |entry| (owner, entry)))
    }

    /// A hash of the `(owner, version)` pairs, the same on every node
    /// that holds the same sets (single writers: one version, one set).
    pub fn hash(&mut self) -> u64 {
        if let Some(hash) = self.hash {
            return hash;
        }
        let mut hasher = Fnv1a::default();
        for (owner, set) in &self.sets {
            hasher.write(owner.host.as_bytes());
            hasher.write(&owner.port.to_le_bytes());
            hasher.write(&owner.uid.to_le_bytes());
            hasher.write(&set.version.to_le_bytes());
        }
        let hash = hasher.finish();
        self.hash = Some(hash);
        hash
    }

    /// Takes the changes to other members' services since the last call.
    pub fn take_changes(&mut self) -> Vec<ServiceChange> {
        std::mem::take(&mut self.changes)
    }

    /// What went from `before` to `after`, gone entries first; nothing
    /// for this node's own set.
    fn diff(
        &self,
        owner: &UniqueAddress,
        before: &OwnerSet,
        after: &OwnerSet,
    ) -> Vec<ServiceChange> {
        if self.is_me(owner) {
            return Vec::new();
        }
        let change = |entry: &ServiceEntry, registered| ServiceChange {
            owner: owner.clone(),
            entry: entry.clone(),
            registered,
        };
        let left = before.entries.difference(&after.entries);
        let gone: Vec<_> = left.map(|entry| change(entry, false)).collect();
        let came = after.entries.difference(&before.entries);
        gone.into_iter()
            .chain(came.map(|entry| change(entry, true)))
            .collect()
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
