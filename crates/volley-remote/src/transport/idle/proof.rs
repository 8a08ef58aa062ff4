//! Associations started on a peer's word, and letting go of those whose
//! address never answers.
//!
//! Most associations are vouched for: this node's own code named the
//! address, it is configured (`trust.known_peers`), or the node there
//! answered the address check as the incarnation that dialed in
//! (`admission/probe.rs`). Two kinds are started on a peer's word alone: the dial
//! back of a node that proved the shared secret (its claimed address is
//! not checked), and a ref a peer declared on a third node, once
//! something is sent to it, with `trust.dial_declared_nodes`. Such an
//! association proves its address when one of its lanes completes a
//! handshake there. One that has not within twice the handshake timeout
//! is stopped as an idle one is (`idle/`), without waiting
//! `stop_idle_outbound_after`: its queued messages are counted as dead
//! letters, `Disassociated` is published with the reason `Unreachable`,
//! and the table lets go of it. Its lanes no longer redial an address
//! that never answered. Traffic that starts it again (a send to it,
//! anything but heartbeats from the node) gives it one more such window.

use std::time::{Duration, Instant};

use crate::transport::events::DisassociationReason;
use crate::transport::idle::{IdleContext, Idleness};
use crate::transport::support::lock;

/// Letting go of unproven associations, for any node with an idle context.
pub(crate) trait Proofs: IdleContext {
    /// How long an association started on a peer's word has to prove its
    /// address: a first connection attempt and one more.
    fn proof_window(&self) -> Duration {
        self.settings().handshake_timeout * 2
    }

    /// Stops every association started on a peer's word whose address has
    /// not answered within [`Self::proof_window`] (run by the failure
    /// monitor on each tick).
    fn stop_unproven_associations(&self, now: Instant) {
        if self.is_shut_down() {
            return;
        }
        let window = self.proof_window();
        for association in self.associations().all() {
            let overdue = {
                let tasks = lock(&association.tasks);
                !tasks.retired
                    && tasks
                        .awaiting_proof
                        .is_some_and(|since| now.saturating_duration_since(since) >= window)
            };
            // A watch or a system message waits for the failure detector's
            // verdict, which ends it; the association is stopped after.
            if !overdue || self.busy(&association) {
                continue;
            }
            tracing::debug!(remote = %association.remote, "an association started on a peer's word never reached its address: stopped");
            // Nothing queued can reach an address that never answered.
            for lane in association.lanes() {
                lane.discard_queued(self);
            }
            let activity = association.activity();
            lock(&association.tasks).seen = activity;
            self.retire(
                &association,
                activity,
                now,
                DisassociationReason::Unreachable,
            );
        }
    }
}

impl<C: IdleContext> Proofs for C {}
