//! The [`foca::Runtime`] the core hands to foca: it only collects.
//!
//! foca's own `AccumulatingRuntime` keeps timers as delays and packets as
//! `Bytes` split off one buffer; this one stamps each timer with the
//! absolute time it is due (the core knows `now`, foca does not), so that a
//! driver needs no clock of its own to order them.

use std::collections::VecDeque;
use std::time::Duration;

use foca::{Notification, OwnedNotification, Runtime, Timer, TimerToken};

use crate::formation::{self, Formation};
use crate::node_id::NodeId;

/// Which of the core's inputs a packet is for (the channel byte of the
/// cluster frame, design §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// A foca packet: `Input::Packet`.
    Swim,
    /// An anti-entropy digest: `Input::SyncDigest`.
    SyncDigest,
    /// An anti-entropy data page: `Input::SyncData`.
    SyncData,
}

impl Channel {
    /// The channel's byte in the cluster frame.
    pub fn code(self) -> u8 {
        match self {
            Channel::Swim => 1,
            Channel::SyncDigest => 2,
            Channel::SyncData => 3,
        }
    }
}

/// A packet the core wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The member it is for.
    pub to: NodeId,
    /// The input it is for at the other end.
    pub channel: Channel,
    /// The encoded packet: the formation envelope, then the channel's
    /// bytes (a SWIM packet's at most `max_packet_size`, a data page's at
    /// most `max_sync_page_bytes` plus its head).
    pub bytes: Vec<u8>,
}

/// A timer of the core: foca's, or the core's own periodic one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterTimer {
    /// One of foca's timers.
    Swim(Timer<NodeId>),
    /// The membership's periodic work: join retries, anti-entropy, leader
    /// actions, tombstone pruning (every `gossip_interval`).
    Tick,
}

/// A timer the core wants delivered back through `Input::Timer` at `at`.
///
/// Every one must be delivered (late is fine, lost is not): foca's probe
/// cycle and the membership's tick stop on a lost timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerAt {
    /// When it is due, on the driver's clock.
    pub at: Duration,
    /// What to hand back.
    pub timer: ClusterTimer,
}

/// What foca produced during one call.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    pub(crate) now: Duration,
    pub(crate) packets: Vec<Packet>,
    pub(crate) timers: Vec<TimerAt>,
    pub(crate) notifications: VecDeque<OwnedNotification<NodeId>>,
    /// The token of foca's latest probe timer: a timer the core submits on
    /// foca's behalf must carry foca's current token to be obeyed.
    pub(crate) timer_token: Option<TimerToken>,
    /// This node's formation, which every payload's envelope names.
    pub(crate) formation: Option<Formation>,
}

impl Outbox {
    /// Queues `body` for `to`, in the envelope naming this node's
    /// formation.
    pub(crate) fn send(&mut self, to: NodeId, channel: Channel, body: &[u8]) {
        let bytes = formation::seal(self.formation, body);
        self.packets.push(Packet { to, channel, bytes });
    }
}

impl Runtime<NodeId> for Outbox {
    fn notify(&mut self, notification: Notification<'_, NodeId>) {
        self.notifications.push_back(notification.to_owned());
    }

    fn send_to(&mut self, to: NodeId, data: &[u8]) {
        self.send(to, Channel::Swim, data);
    }

    fn submit_after(&mut self, timer: Timer<NodeId>, after: Duration) {
        if let Timer::ProbeRandomMember(token) = &timer {
            self.timer_token = Some(*token);
        }
        self.timers.push(TimerAt {
            at: self.now.saturating_add(after),
            timer: ClusterTimer::Swim(timer),
        });
    }
}
