//! The virtual clock's queue: what happens next, and when.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::node_id::{Addr, NodeId};
use crate::outbox::{Channel, ClusterTimer};

/// Something due at a virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Due {
    /// A packet reaches whatever node runs at `to` then.
    Delivery {
        to: Addr,
        channel: Channel,
        bytes: Vec<u8>,
    },
    /// A timer of the incarnation `owner` (dropped if that incarnation is
    /// no longer running: a killed node's timers die with it).
    Timer { owner: NodeId, timer: ClusterTimer },
}

/// One scheduled entry; its order is its time, then its sequence number.
#[derive(Debug)]
struct Entry {
    at: Duration,
    seq: u64,
    due: Due,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Entries ordered by time, then by the order they were scheduled in, so
/// that two entries due at once always run in the same order.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    heap: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
}

impl Schedule {
    pub(crate) fn push(&mut self, at: Duration, due: Due) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { at, seq, due }));
    }

    /// The earliest entry due at or before `deadline`.
    pub(crate) fn pop_until(&mut self, deadline: Duration) -> Option<(Duration, Due)> {
        if self.heap.peek()?.0.at > deadline {
            return None;
        }
        let Reverse(entry) = self.heap.pop()?;
        Some((entry.at, entry.due))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn delivery(tag: u8) -> Due {
        Due::Delivery {
            to: (Arc::from("h"), 1),
            channel: Channel::Swim,
            bytes: vec![tag],
        }
    }

    #[test]
    fn entries_come_out_by_time_then_in_the_order_they_went_in() {
        let mut schedule = Schedule::default();
        let (early, late) = (Duration::from_millis(1), Duration::from_millis(2));
        schedule.push(late, delivery(1));
        schedule.push(early, delivery(2));
        schedule.push(late, delivery(3));
        schedule.push(early, delivery(4));
        let order: Vec<(Duration, Due)> = std::iter::from_fn(|| schedule.pop_until(late)).collect();
        assert_eq!(
            order,
            [
                (early, delivery(2)),
                (early, delivery(4)),
                (late, delivery(1)),
                (late, delivery(3))
            ]
        );
    }

    #[test]
    fn nothing_after_the_deadline_comes_out() {
        let mut schedule = Schedule::default();
        schedule.push(Duration::from_millis(5), delivery(1));
        assert_eq!(schedule.pop_until(Duration::from_millis(4)), None);
        assert!(schedule.pop_until(Duration::from_millis(5)).is_some());
    }
}
