//! The uid-less refs to local paths a peer declared on one connection
//! (from `resolve`), by id: the path of each, so that its messages go to
//! whoever lives there when they arrive (`ImportTable::rebind`).
//!
//! The paths share one string per connection instead of an `ActorPath`
//! each (two allocations, one of them the node's name again): an entry
//! costs its path's bytes and a map slot, and a closed connection gives
//! its paths back as one block, not as thousands of small ones the
//! allocator may keep.

use crate::transport::support::FastMap;

/// Where one path sits in the shared string.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

/// Paths (their elements, from the root: `/user/a`) by id.
#[derive(Default)]
pub(super) struct Selections {
    by_id: FastMap<u32, Span>,
    paths: String,
    /// Bytes of `paths` no entry uses any more.
    garbage: usize,
}

/// Below this much garbage the shared string is never rewritten.
const MIN_GARBAGE: usize = 4096;

impl Selections {
    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub(super) fn contains(&self, id: u32) -> bool {
        self.by_id.contains_key(&id)
    }

    /// The path of `id`.
    pub(super) fn get(&self, id: u32) -> Option<&str> {
        let span = self.by_id.get(&id)?;
        let start = span.start as usize;
        self.paths.get(start..start + span.len as usize)
    }

    /// Binds `id` to `elements`, replacing its path. The caller keeps the
    /// string's size within `limits.max_imported_ref_bytes`, far below the
    /// `u32` offsets' range (garbage is at most the live bytes again).
    pub(super) fn insert(&mut self, id: u32, elements: &str) {
        self.remove(id);
        let span = Span {
            start: self.paths.len() as u32,
            len: elements.len() as u32,
        };
        self.paths.push_str(elements);
        self.by_id.insert(id, span);
    }

    /// Unbinds `id`, if it is bound.
    pub(super) fn remove(&mut self, id: u32) {
        let Some(span) = self.by_id.remove(&id) else {
            return;
        };
        self.garbage += span.len as usize;
        if self.by_id.is_empty() {
            *self = Selections::default();
        } else if self.garbage >= MIN_GARBAGE && self.garbage > self.paths.len() / 2 {
            self.compact();
        }
    }

    /// Rewrites the shared string with the live paths only: at most once
    /// per as many bytes removed as are live, so its cost per removal is
    /// bounded.
    #[cold]
    fn compact(&mut self) {
        let mut paths = String::with_capacity(self.paths.len() - self.garbage);
        for span in self.by_id.values_mut() {
            let start = span.start as usize;
            let path = &self.paths[start..start + span.len as usize];
            span.start = paths.len() as u32;
            paths.push_str(path);
        }
        self.paths = paths;
        self.garbage = 0;
    }

    /// The bytes the shared string holds, garbage included.
    #[cfg(test)]
    pub(super) fn string_len(&self) -> usize {
        self.paths.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_replaced_removed_and_compacted() {
        let mut s = Selections::default();
        for id in 0..1000 {
            s.insert(id, &format!("/user/a{id:04}"));
        }
        assert_eq!(s.get(7), Some("/user/a0007"));
        s.insert(7, "/user/other");
        assert_eq!(s.get(7), Some("/user/other"));
        for id in 0..900 {
            s.remove(id);
        }
        assert_eq!(s.len(), 100);
        assert!(s.string_len() <= 2 * 100 * 11 + MIN_GARBAGE, "compacted");
        assert_eq!(s.get(950), Some("/user/a0950"));
        assert_eq!(s.get(3), None);
        for id in 900..1000 {
            s.remove(id);
        }
        assert!(s.is_empty() && s.string_len() == 0);
    }
}
