//! Storage of an [`ImportTable`](crate::transport::refs::tables::ImportTable): entries by
//! peer-chosen id, in memory proportional to the number of entries whatever
//! the ids, and capped.
//!
//! A volley peer numbers its refs in two sequences (`refs/tables.rs`): a ring
//! `1..=TEMPORARY_IDS` for reply handles, and lasting refs counting up from
//! `TEMPORARY_IDS + 1`. Each sequence gets a dense vector, indexed from its
//! first id, so the lookup of every message's recipient stays one bounds
//! check and one load. A dense vector only grows to an id that is at most
//! twice the entries it holds plus [`SLACK`]; any other id (a hostile peer's
//! 2^20, say) goes to a hash map. An entry thus costs a bounded number of
//! slots, never the distance to the previous id.

use crate::transport::refs::tables::TEMPORARY_IDS;
use crate::transport::support::FastMap;

/// How far beyond its entries a dense vector may reach.
const SLACK: usize = 64;

/// Entries by `u32` id.
pub(crate) struct IdSlots<T> {
    /// Ids `1..=TEMPORARY_IDS`, at index `id - 1`.
    ring: Dense<T>,
    /// Ids from `TEMPORARY_IDS + 1`, at index `id - TEMPORARY_IDS - 1`.
    lasting: Dense<T>,
    /// Every other id, and ids far beyond the dense vectors' entries.
    sparse: FastMap<u32, T>,
    len: usize,
    max: usize,
}

/// More entries than the table's cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full {
    pub(crate) max: usize,
}

struct Dense<T> {
    slots: Vec<Option<T>>,
    filled: usize,
}

impl<T> Dense<T> {
    fn new() -> Self {
        Dense {
            slots: Vec::new(),
            filled: 0,
        }
    }
}

impl<T> IdSlots<T> {
    /// An empty table that holds at most `max` entries.
    pub(crate) fn new(max: usize) -> Self {
        IdSlots {
            ring: Dense::new(),
            lasting: Dense::new(),
            sparse: FastMap::default(),
            len: 0,
            max,
        }
    }

    /// The entry of `id`.
    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<&T> {
        let (dense, index) = self.region(id);
        match dense.slots.get(index) {
            Some(slot) => slot.as_ref(),
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(&id),
        }
    }

    /// Binds `id` to `value`, replacing its entry; a new id past the cap
    /// is refused.
    pub(crate) fn insert(&mut self, id: u32, value: T) -> Result<(), Full> {
        let (_, index) = self.region(id);
        let max = self.max;
        let len = self.len;
        let dense = self.region_mut(id);
        if let Some(slot) = dense.slots.get_mut(index) {
            let new = slot.is_none();
            if new && len >= max {
                return Err(Full { max });
            }
            *slot = Some(value);
            if new {
                dense.filled += 1;
                self.len += 1;
            }
            return Ok(());
        }
        if let Some(old) = self.sparse.get_mut(&id) {
            *old = value;
            return Ok(());
        }
        if len >= max {
            return Err(Full { max });
        }
        self.len += 1;
        let dense = self.region_mut(id);
        if index <= 2 * dense.filled + SLACK {
            dense.slots.resize_with(index + 1, || None);
            dense.slots[index] = Some(value);
            dense.filled += 1;
            self.adopt_sparse(id);
        } else {
            self.sparse.insert(id, value);
        }
        Ok(())
    }

    /// Unbinds `id`, if it is bound.
    pub(crate) fn remove(&mut self, id: u32) {
        let (_, index) = self.region(id);
        let dense = self.region_mut(id);
        if let Some(slot @ Some(_)) = dense.slots.get_mut(index) {
            *slot = None;
            dense.filled -= 1;
            self.len -= 1;
        } else if self.sparse.remove(&id).is_some() {
            self.len -= 1;
        }
    }

    /// The cap on entries.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// How many ids are bound.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Moves the sparse entries that the dense vector of `id`'s sequence
    /// now covers into it, so that `get` finds them there.
    fn adopt_sparse(&mut self, id: u32) {
        if self.sparse.is_empty() {
            return;
        }
        let covered: Vec<u32> = self
            .sparse
            .keys()
            .copied()
            .filter(|&other| {
                let (a, i) = self.region(other);
                let (b, _) = self.region(id);
                std::ptr::eq(a, b) && i < a.slots.len()
            })
            .collect();
        for other in covered {
            let value = self.sparse.remove(&other);
            let (_, index) = self.region(other);
            let dense = self.region_mut(other);
            dense.slots[index] = value;
            dense.filled += 1;
        }
    }

    #[inline]
    fn region(&self, id: u32) -> (&Dense<T>, usize) {
        if id <= TEMPORARY_IDS {
            (&self.ring, (id as usize).wrapping_sub(1))
        } else {
            (&self.lasting, (id - TEMPORARY_IDS - 1) as usize)
        }
    }

    fn region_mut(&mut self, id: u32) -> &mut Dense<T> {
        if id <= TEMPORARY_IDS {
            &mut self.ring
        } else {
            &mut self.lasting
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_are_dense_and_far_ids_sparse() {
        let mut t = IdSlots::new(100_000);
        for id in 1..=TEMPORARY_IDS + 500 {
            t.insert(id, id).unwrap();
        }
        assert!(t.sparse.is_empty(), "a volley peer's ids stay dense");
        t.insert(1 << 20, 7).unwrap();
        t.insert(u32::MAX, 8).unwrap();
        t.remove(1 << 20);
        t.remove(3);
        assert_eq!((t.get(1 << 20), t.get(3)), (None, None), "removed");
        assert_eq!(t.len(), TEMPORARY_IDS as usize + 500 - 1 + 1);
        t.insert(1 << 20, 7).unwrap();
        t.insert(3, 3).unwrap();
        assert_eq!(t.sparse.len(), 2);
        assert!(t.lasting.slots.len() <= 501 + SLACK);
        assert_eq!(t.get(1 << 20), Some(&7));
        assert_eq!(t.get(u32::MAX), Some(&8));
        assert_eq!(t.get(TEMPORARY_IDS + 3), Some(&(TEMPORARY_IDS + 3)));
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(TEMPORARY_IDS + 501), None);
        assert_eq!(t.len(), TEMPORARY_IDS as usize + 502);
    }

    #[test]
    fn a_lone_far_id_costs_one_entry_and_later_growth_adopts_it() {
        let mut t = IdSlots::new(1000);
        let far = TEMPORARY_IDS + 101;
        t.insert(far, 1).unwrap();
        assert!(t.lasting.slots.is_empty());
        for id in (TEMPORARY_IDS + 1..=TEMPORARY_IDS + 102).filter(|&id| id != far) {
            t.insert(id, 2).unwrap();
        }
        assert!(t.sparse.is_empty(), "covered by the dense vector now");
        assert_eq!(t.get(far), Some(&1));
        t.insert(far, 3).unwrap();
        assert_eq!(t.get(far), Some(&3));
        assert_eq!(t.len(), 102, "re-binding does not count");
    }

    #[test]
    fn the_cap_refuses_new_ids_only() {
        let mut t = IdSlots::new(2);
        t.insert(1, 'a').unwrap();
        t.insert(1 << 30, 'b').unwrap();
        assert_eq!(t.insert(2, 'c'), Err(Full { max: 2 }));
        assert_eq!(t.insert(1 << 29, 'c'), Err(Full { max: 2 }));
        t.insert(1, 'd').unwrap();
        t.insert(1 << 30, 'e').unwrap();
        assert_eq!((t.get(1), t.get(1 << 30)), (Some(&'d'), Some(&'e')));
    }
}
