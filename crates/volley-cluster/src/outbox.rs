//! The [`foca::Runtime`] the core hands to foca: it only collects.
//!
//! foca's own `AccumulatingRuntime` keeps timers as delays and packets as
//! `Bytes` split off one buffer; this one stamps each timer with the
//! absolute time it is due (the core knows `now`, foca does not), so that a
//! driver needs no clock of its own to order them.

use std::collections::VecDeque;
use std::time::Duration;

use foca::{Notification, OwnedNotification, Runtime, Timer};

use crate::node_id::NodeId;

/// A packet foca wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The member it is for.
    pub to: NodeId,
    /// The encoded packet, at most `max_packet_size` bytes.
    pub bytes: Vec<u8>,
}

/// A timer foca wants delivered back through `Input::Timer` at `at`.
///
/// Every one must be delivered (late is fine, lost is not): foca's probe
/// cycle stops on a lost timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerAt {
    /// When it is due, on the driver's clock.
    pub at: Duration,
    /// What to hand back.
    pub timer: Timer<NodeId>,
}

/// What foca produced during one call.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    pub(crate) now: Duration,
    pub(crate) packets: Vec<Packet>,
    pub(crate) timers: Vec<TimerAt>,
    pub(crate) notifications: VecDeque<OwnedNotification<NodeId>>,
}

impl Runtime<NodeId> for Outbox {
    fn notify(&mut self, notification: Notification<'_, NodeId>) {
        self.notifications.push_back(notification.to_owned());
    }

    fn send_to(&mut self, to: NodeId, data: &[u8]) {
        self.packets.push(Packet {
            to,
            bytes: data.to_vec(),
        });
    }

    fn submit_after(&mut self, timer: Timer<NodeId>, after: Duration) {
        self.timers.push(TimerAt {
            at: self.now.saturating_add(after),
            timer,
        });
    }
}
