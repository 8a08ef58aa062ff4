//! One member's registrations. Only that member changes them, bumping the
//! version each time, so two nodes holding the same version of a set hold
//! the same entries and a merge needs no causal metadata: the higher
//! version wins (a max-register per owner).

use std::collections::BTreeSet;

use super::entry::ServiceEntry;

/// A member's services at one version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnerSet {
    /// Bumped by the owner on every change.
    pub version: u64,
    /// The services.
    pub entries: BTreeSet<ServiceEntry>,
}

impl OwnerSet {
    /// The set with `entry` added or removed at the next version; `None`
    /// if that changes nothing.
    pub(crate) fn updated(&self, entry: ServiceEntry, registered: bool) -> Option<OwnerSet> {
        let mut entries = self.entries.clone();
        let changed = if registered {
            entries.insert(entry)
        } else {
            entries.remove(&entry)
        };
        changed.then(|| OwnerSet {
            version: self.version + 1,
            entries,
        })
    }
}
