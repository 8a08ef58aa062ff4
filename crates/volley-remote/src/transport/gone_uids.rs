//! The incarnations of a node an association remembers as gone
//! (replaced, shut down, quarantined): refused whatever their stamps
//! (`liveness/order.rs`). Bounded, the most recent kept, so that a peer that shakes
//! hands with ever new uids cannot grow this node's memory.

use std::collections::{HashSet, VecDeque};

/// The most incarnations of one node an association remembers as gone
/// (and, apart, as quarantined).
pub(crate) const REMEMBERED_GONE: usize = 64;

/// A set of uids that forgets the oldest one past [`REMEMBERED_GONE`].
#[derive(Debug, Default)]
pub(crate) struct RecentUids {
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

impl RecentUids {
    /// Remembers `uid`; false if it was remembered already.
    pub(crate) fn insert(&mut self, uid: u64) -> bool {
        if !self.set.insert(uid) {
            return false;
        }
        self.order.push_back(uid);
        if self.order.len() > REMEMBERED_GONE {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
        true
    }

    pub(crate) fn contains(&self, uid: &u64) -> bool {
        self.set.contains(uid)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gone_uids_are_bounded_and_forget_the_oldest_first() {
        let mut gone = RecentUids::default();
        for uid in 0..(REMEMBERED_GONE as u64 + 10) {
            assert!(gone.insert(uid));
        }
        assert_eq!(gone.len(), REMEMBERED_GONE);
        assert!(!gone.contains(&0) && !gone.contains(&9));
        assert!(gone.contains(&10) && gone.contains(&(REMEMBERED_GONE as u64 + 9)));
        assert!(!gone.insert(10), "a uid remembered already");
        assert_eq!(gone.len(), REMEMBERED_GONE);
    }
}
