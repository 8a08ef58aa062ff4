//! An association's reliable system-message buffers: what was sent and
//! not yet acknowledged (kept to send again on a new connection), and what
//! was delivered of the peer's. The protocol that fills and drains them is
//! `control/system_messages.rs`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use volley::AnyRef;

/// The serializer id system-message payloads are written with: raw bytes
/// (§9.1), laid out per kind as [`SystemKind`] says.
pub(crate) const SYSTEM_SERIALIZER: u16 = 1;

/// What a system message asks; its wire value is the frame's `type_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum SystemKind {
    /// The sender (header `sender`) watches the recipient. No payload.
    Watch = 1,
    /// The sender no longer watches the recipient. No payload.
    Unwatch = 2,
    /// Stop the recipient now. No payload.
    Terminate = 3,
    /// Stop the recipient after the messages before this one. No payload.
    GracefulStop = 4,
    /// An actor the recipient watched has terminated. Payload: its uid
    /// (u64, little-endian) then its full path (UTF-8, the rest).
    DeathNotice = 5,
    /// A remote spawn request, to the node's `/user`. Payload: a whole
    /// SpawnRequest frame (§5.11).
    Spawn = 6,
    /// The answer to one, to the requesting node's `/user`. Payload: a
    /// whole SpawnResponse frame (§5.12).
    Spawned = 7,
}

impl SystemKind {
    pub(crate) fn from_u32(v: u32) -> Option<SystemKind> {
        Some(match v {
            1 => SystemKind::Watch,
            2 => SystemKind::Unwatch,
            3 => SystemKind::Terminate,
            4 => SystemKind::GracefulStop,
            5 => SystemKind::DeathNotice,
            6 => SystemKind::Spawn,
            7 => SystemKind::Spawned,
            _ => return None,
        })
    }

    /// The kind's name, as logs show it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SystemKind::Watch => "Watch",
            SystemKind::Unwatch => "Unwatch",
            SystemKind::Terminate => "Terminate",
            SystemKind::GracefulStop => "GracefulStop",
            SystemKind::DeathNotice => "DeathNotice",
            SystemKind::Spawn => "Spawn",
            SystemKind::Spawned => "Spawned",
        }
    }

    /// What untrusted mode accepts from a peer: watch and unwatch, and the
    /// answers to this node's own watches and spawn requests (a death
    /// notice reaches only watchers this node registered; a spawn answer
    /// only a request it made, to that node).
    pub(crate) fn allowed_untrusted(self) -> bool {
        matches!(
            self,
            SystemKind::Watch | SystemKind::Unwatch | SystemKind::DeathNotice | SystemKind::Spawned
        )
    }
}

/// One system message, kept until acknowledged so that it can be encoded
/// again on a new connection (ref ids are per connection).
pub(crate) struct Pending {
    pub(crate) seq: u64,
    pub(crate) kind: SystemKind,
    pub(crate) recipient: AnyRef,
    pub(crate) sender: Option<AnyRef>,
    pub(crate) payload: Vec<u8>,
    pub(crate) queued_at: Instant,
}

/// The association's system messages not yet acknowledged.
#[derive(Default)]
pub(crate) struct Outbox {
    pub(crate) next_seq: u64,
    pub(crate) unacked: VecDeque<Pending>,
    /// Highest sequence number received contiguously from the peer's
    /// current incarnation, piggy-backed on each message sent.
    pub(crate) inbound_acked: u64,
}

impl Outbox {
    /// Forgets everything: a new incarnation numbers from 1. Returns the
    /// messages that were never acknowledged.
    pub(crate) fn reset(&mut self) -> VecDeque<Pending> {
        self.next_seq = 0;
        self.inbound_acked = 0;
        std::mem::take(&mut self.unacked)
    }

    pub(crate) fn acknowledge(&mut self, ack: u64) {
        while self.unacked.front().is_some_and(|p| p.seq <= ack) {
            self.unacked.pop_front();
        }
    }

    /// How long the oldest unacknowledged message has waited.
    pub(crate) fn oldest_wait(&self, now: Instant) -> Option<Duration> {
        self.unacked
            .front()
            .map(|p| now.saturating_duration_since(p.queued_at))
    }
}

/// What has been delivered of one incarnation's system messages.
#[derive(Default)]
pub(crate) struct Inbox {
    /// The incarnation the count belongs to.
    pub(crate) uid: u64,
    pub(crate) delivered: u64,
}

impl Inbox {
    /// Whether the message numbered `seq` is to be delivered now (the next
    /// one) or was seen already; a gap is an error.
    pub(crate) fn accept(&mut self, seq: u64) -> Result<bool, SystemMessageError> {
        if seq <= self.delivered {
            return Ok(false);
        }
        if seq != self.delivered + 1 {
            return Err(SystemMessageError::Gap {
                seq,
                delivered: self.delivered,
            });
        }
        self.delivered = seq;
        Ok(true)
    }
}

/// Why a system message frame ends the connection it came on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SystemMessageError {
    #[error("system message {seq} after {delivered}: a gap (the resend on the next connection fills it)")]
    Gap { seq: u64, delivered: u64 },
}
