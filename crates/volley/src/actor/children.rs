//! The children of one actor: a name registry shared with spawners on other
//! threads (so `system.spawn` can reserve a name while the parent runs), plus
//! each child's restart statistics.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::actor::actor_ref::AnyRef;
use crate::actor::cell::name::AnonymousName;
use crate::supervision::strategy::RestartStats;

pub(crate) struct ChildEntry {
    pub(crate) actor: AnyRef,
    /// The name's hash, kept so that growing the table hashes nothing.
    hash: u64,
    /// A stop was requested; the name stays taken until it has terminated.
    /// Set only through `Children`, which counts them.
    stopping: bool,
    /// Its failure was escalated: it waits, suspended, for the directive
    /// this actor's own supervisor gives.
    escalated: bool,
    pub(crate) stats: RestartStats,
}

/// Children by name. The key is each child's own name, not a copy: a
/// copy was one of the few allocations per spawn.
/// Hashed with foldhash, not the standard library's SipHash: spawn and stop
/// hash a child's name, and SipHash made that a tenth of spawning an actor.
/// foldhash's per-table random seed keeps names that a caller chose from
/// being aimed at one bucket.
#[derive(Default)]
struct ChildMap {
    table: HashTable<ChildEntry>,
    hasher: foldhash::quality::RandomState,
}

impl ChildMap {
    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    fn get(&self, name: &str) -> Option<&ChildEntry> {
        self.table.find(self.hash(name), |e| e.name() == name)
    }

    /// The entry of this exact incarnation.
    fn find_mut(&mut self, child: &AnyRef) -> Option<&mut ChildEntry> {
        let hash = self.hash(child.name());
        self.table.find_mut(hash, |e| e.actor == *child)
    }
}

impl ChildEntry {
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping
    }

    fn name(&self) -> &str {
        self.actor.name()
    }
}

#[derive(Default)]
pub(crate) struct Children {
    /// Boxed on first use: most actors never have children, and an inline
    /// empty map costs 48 bytes in every one of them.
    map: Option<Box<ChildMap>>,
    next_anonymous: u64,
    /// The parent is terminating: no new children.
    closed: bool,
    /// How many entries have `stopping` set: a counter, so that each
    /// `ChildTerminated` costs O(1) rather than a scan of all children
    /// (stopping 100,000 children was quadratic before).
    stopping: usize,
}

impl Children {
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    pub(crate) fn close(&mut self) {
        self.closed = true;
    }

    fn map(&self) -> Option<&ChildMap> {
        self.map.as_deref()
    }

    fn map_mut(&mut self) -> Option<&mut ChildMap> {
        self.map.as_deref_mut()
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.map().is_some_and(|m| m.get(name).is_some())
    }

    /// `$a`, `$b`, … `$ba`: short, unique, and never a valid user name.
    pub(crate) fn next_anonymous_name(&mut self) -> AnonymousName {
        let n = self.next_anonymous;
        self.next_anonymous += 1;
        AnonymousName::nth(n)
    }

    /// Registers `actor`, whose path ends in a name no child has (the
    /// caller checked, under the same lock).
    pub(crate) fn insert(&mut self, actor: AnyRef) {
        let map = self.map.get_or_insert_with(Box::default);
        let hash = map.hash(actor.name());
        debug_assert!(map.get(actor.name()).is_none(), "a duplicate child name");
        map.table.insert_unique(
            hash,
            ChildEntry {
                actor,
                hash,
                stopping: false,
                escalated: false,
                stats: RestartStats::default(),
            },
            |e| e.hash,
        );
    }

    /// Removes the child if this exact incarnation is registered.
    pub(crate) fn remove(&mut self, child: &AnyRef) -> bool {
        let Some(map) = self.map.as_deref_mut() else {
            return false;
        };
        let hash = map.hash(child.name());
        // An entry under the same name that is a newer incarnation stays.
        let Ok(found) = map.table.find_entry(hash, |e| e.actor == *child) else {
            return false;
        };
        let (entry, _) = found.remove();
        if entry.stopping {
            self.stopping -= 1;
        }
        if map.table.is_empty() {
            self.map = None;
        }
        true
    }

    pub(crate) fn get(&self, name: &str) -> Option<&ChildEntry> {
        self.map()?.get(name)
    }

    pub(crate) fn entry_mut(&mut self, child: &AnyRef) -> Option<&mut ChildEntry> {
        self.map_mut()?.find_mut(child)
    }

    pub(crate) fn refs(&self) -> Vec<AnyRef> {
        self.map()
            .map(|m| m.table.iter().map(|e| e.actor.clone()).collect())
            .unwrap_or_default()
    }

    /// Notes that `child`'s failure was escalated.
    pub(crate) fn mark_escalated(&mut self, child: &AnyRef) {
        if let Some(entry) = self.entry_mut(child) {
            entry.escalated = true;
        }
    }

    /// The children whose failures were escalated, clearing the marks.
    pub(crate) fn take_escalated(&mut self) -> Vec<AnyRef> {
        let Some(map) = self.map.as_deref_mut() else {
            return Vec::new();
        };
        map.table
            .iter_mut()
            .filter_map(|e| std::mem::take(&mut e.escalated).then(|| e.actor.clone()))
            .collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map().is_none_or(|m| m.table.is_empty())
    }

    pub(crate) fn any_stopping(&self) -> bool {
        self.stopping > 0
    }

    /// Marks `child` as stopping; false if it is not a child.
    pub(crate) fn mark_stopping(&mut self, child: &AnyRef) -> bool {
        let Some(entry) = self.entry_mut(child) else {
            return false;
        };
        if !entry.stopping {
            entry.stopping = true;
            self.stopping += 1;
        }
        true
    }

    /// Marks every child as stopping and returns those not yet marked.
    pub(crate) fn mark_all_stopping(&mut self) -> Vec<AnyRef> {
        let Some(map) = self.map.as_deref_mut() else {
            return Vec::new();
        };
        let newly: Vec<AnyRef> = map
            .table
            .iter_mut()
            .filter(|e| !e.stopping)
            .map(|e| {
                e.stopping = true;
                e.actor.clone()
            })
            .collect();
        self.stopping += newly.len();
        newly
    }
}

/// Stops `child` if it is in `children`: marks it, then sends `Stop`
/// outside the lock. False if it is not a child.
pub(crate) fn stop_child(children: &std::sync::Mutex<Children>, child: &AnyRef) -> bool {
    let marked = crate::util::locks::lock(children).mark_stopping(child);
    if marked {
        child.send_system(crate::actor::system_msg::SystemMsg::Stop);
    }
    marked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_names_are_unique_and_reserved() {
        let mut c = Children::default();
        let names: Vec<String> = (0..100)
            .map(|_| c.next_anonymous_name().as_str().to_string())
            .collect();
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), 100);
        assert!(names.iter().all(|n| n.starts_with('$') && n.len() > 1));
        assert_eq!(names[0], "$a");
        assert_eq!(names[25], "$z");
        assert_eq!(names[26], "$ba");
        c.next_anonymous = u64::MAX - 1;
        assert_eq!(c.next_anonymous_name().as_str().len(), 15);
    }
}
