//! The core's timers on the driver's clock: each is kept until due, in
//! order, and none is dropped (the core's probe cycle and tick stop on a
//! lost one).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::outbox::{ClusterTimer, TimerAt};

/// Timers by `(due, arrival)`, so equal due times keep their order.
#[derive(Default)]
pub(crate) struct Timers {
    due: BTreeMap<(Duration, u64), ClusterTimer>,
    next_seq: u64,
}

impl Timers {
    pub(crate) fn add(&mut self, timers: Vec<TimerAt>) {
        for TimerAt { at, timer } in timers {
            self.due.insert((at, self.next_seq), timer);
            self.next_seq += 1;
        }
    }

    /// When the earliest timer is due.
    pub(crate) fn next_due(&self) -> Option<Duration> {
        self.due.keys().next().map(|(at, _)| *at)
    }

    /// The earliest timer if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Duration) -> Option<ClusterTimer> {
        let first = self.due.first_key_value()?.0;
        if first.0 > now {
            return None;
        }
        self.due.pop_first().map(|(_, timer)| timer)
    }
}
