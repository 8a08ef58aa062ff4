//! Which of an association's tasks run, whether it is stopped for
//! idleness (`idle/` stops and starts it), and since when it waits for
//! proof of its node's address (`idle/proof.rs`).

use std::time::Instant;

use super::Association;
use crate::transport::support::lock;

/// Which of an association's tasks run, and whether it is stopped.
#[derive(Default)]
pub(crate) struct Tasks {
    /// Stopped for idleness; its lanes refuse sends until it is started.
    pub(crate) retired: bool,
    /// The writer task of each lane runs (or is about to).
    pub(crate) writers: [bool; 3],
    /// The heartbeat task runs.
    pub(crate) heartbeat: bool,
    /// The lanes' activity counts when the monitor last saw them change,
    /// and when that was.
    pub(crate) seen: [u64; 3],
    pub(crate) since: Option<Instant>,
    /// When it was stopped while remembering a quarantined incarnation:
    /// the table holds it until `remove_quarantined_association_after`
    /// has passed.
    pub(crate) held_for_quarantine: Option<Instant>,
    /// Since when an association started on a peer's word waits for a
    /// lane to reach its address (`idle/proof.rs`); `None` once one has, or
    /// for one this node vouched for.
    pub(crate) awaiting_proof: Option<Instant>,
}

impl Tasks {
    /// Notes that the association's address is still to be proved, from
    /// `now`.
    pub(crate) fn await_proof(&mut self, now: Instant) {
        self.awaiting_proof = Some(now);
    }

    /// Gives an association still unproved a new window from `now`.
    pub(in crate::transport) fn renew_proof_window(&mut self, now: Instant) {
        if self.awaiting_proof.is_some() {
            self.awaiting_proof = Some(now);
        }
    }
}

impl Association {
    /// One of its lanes completed a handshake with the node at its
    /// address: it is kept as any association is.
    pub(crate) fn proved(&self) {
        lock(&self.tasks).awaiting_proof = None;
    }
}
