//! Incarnations of remote nodes: which one this node talks to, which are
//! gone, and which are quarantined.
//!
//! An incarnation is a node's address plus the uid it draws at start; both
//! handshake directions tell it. What this module decides:
//!
//! - **A new uid** at a known address means the node restarted: the old
//!   incarnation is gone, its watchers get `Terminated`, and the reliable
//!   system-message channel starts afresh. The new one is associated with
//!   at once: nothing restarts on this side, and every lane that is
//!   pausing between reconnect attempts dials at once.
//! - **Gone** (detector verdict, a peer's shutdown notice, a refused
//!   handshake): the association goes *down*. Queued messages become dead
//!   letters, sends fail at once, connections are dropped, and the node's
//!   watchers get `Terminated` (`AddressTerminated`). A handshake with a new
//!   incarnation brings it back up.
//! - **An older uid** (its handshake's stamp says it started before the
//!   current incarnation, which is alive) is refused and changes nothing:
//!   a late connection of a previous run (`order.rs`).
//! - **Quarantined**: a gone incarnation given up for a failure (detector,
//!   system messages not acknowledged) is refused for good: its handshakes
//!   are answered `Quarantined`, a connection to it is closed, as in Akka.
//!   An incarnation that shut down cleanly is gone but not quarantined.
//!
//! Whatever the reason, a gone incarnation's inbound connections end at
//! once, before the events about it, and deliver nothing more
//! (`inbound/ends.rs`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::transport::events::{DisassociationReason, RemotingEvent};
use crate::transport::incarnation::Incarnation;
use crate::transport::liveness::authority::{MemberReport, MemberVerdicts};
use crate::transport::liveness::order::judge;
use crate::transport::liveness::LivenessContext;
use crate::transport::outbound::association::{Association, Refusal};
use crate::transport::support::lock;
use crate::transport::support::log_limited;
use crate::wire::{Address, Lane, PduKind};

/// What this module decides, for any node whose context offers what it
/// needs (`RemotingCore` in the transport, a fake in a test).
pub(crate) trait Incarnations: LivenessContext + Sized {
    /// A handshake on `lane` (ours or the peer's) with incarnation `peer`
    /// of the node of `association` completed. Refused if that incarnation
    /// is gone, or older than the current one while that one is alive
    /// (`order.rs`); a new one replaces the last.
    fn handshake_seen(
        &self,
        association: &Association,
        peer: Incarnation,
        lane: Lane,
    ) -> Result<(), Refusal> {
        let uid = peer.uid;
        let mut control = lock(&association.control);
        judge(association, &mut control, peer)?;
        let mut replaced = None;
        let new_incarnation = control.uid != Some(uid);
        if new_incarnation || control.stamp.is_none() {
            // A stamp is learnt with the incarnation, or later from a
            // stamped handshake of it.
            control.stamp = peer.stamp;
        }
        if new_incarnation {
            let previous = control.uid.replace(uid);
            if let Some(old) = previous {
                if control.dead.insert(old) {
                    replaced = Some(old);
                }
                // What was sent to the old incarnation is void: the new one
                // numbers from 1, and must not see frames numbered for the
                // old one that are still queued. (On first contact the
                // messages queued meanwhile are for this incarnation.)
                let unacked = control.outbox.reset();
                association
                    .lane(Lane::Control)
                    .discard_queued_kinds(self, &[PduKind::SystemMessage, PduKind::SystemAck]);
                if !unacked.is_empty() {
                    tracing::debug!(remote = %association.remote, count = unacked.len(), "system messages the old incarnation never acknowledged are dropped");
                }
            }
            association.set_down(false);
            association.leaving.store(false, Ordering::Relaxed);
            control.reported_to_authority = 0;
            self.reachability()
                .restart(&association.remote, Instant::now());
        }
        let announce = lane == Lane::Control && control.announced != Some(uid);
        if announce {
            control.announced = Some(uid);
        }
        drop(control);
        if let Some(old) = replaced {
            // Nothing the old incarnation sent is delivered from now on.
            self.end_inbound_connections(&association.remote, old);
            // Connections this node made to the old incarnation must not
            // carry what is meant for the new one (its system messages
            // numbered from 1 would be taken there as duplicates): every
            // lane dials again. A connection whose handshake just told of
            // the new incarnation is not touched: it is not serving yet,
            // and a reset asked before a connection serves is not for it.
            for lane in association.lanes() {
                lane.drop_connection();
            }
            association.deaths.fetch_add(1, Ordering::Relaxed);
            tracing::info!(remote = %association.remote, old_uid = old, new_uid = uid, "node restarted: a new incarnation");
            self.publish(RemotingEvent::Disassociated {
                remote: association.remote.clone(),
                reason: DisassociationReason::Restarted,
            });
            self.address_terminated(association, Some(old), DisassociationReason::Restarted);
            self.replaced_incarnation(association, old);
        }
        if new_incarnation {
            // The node is there now and judges this one from this contact:
            // a lane still pausing after the old incarnation's outage
            // dials at once, so that its heartbeats are not held back
            // past the node's patience. Asked after the connections were
            // dropped: a lane that dialed first would see its new
            // connection dropped, then pause a whole back-off.
            for lane in association.lanes() {
                lane.redial.now();
            }
        }
        if announce {
            tracing::debug!(remote = %association.remote, uid, "associated");
            self.publish(RemotingEvent::Associated {
                remote: association.remote.clone(),
                uid,
            });
        }
        Ok(())
    }

    /// The node's current incarnation is gone: `reason` says why, and
    /// `quarantine` whether it is refused for good.
    fn node_down(
        &self,
        association: &Association,
        reason: DisassociationReason,
        quarantine: Option<&str>,
    ) {
        self.incarnation_down(association, None, reason, quarantine);
    }

    /// [`node_down`](Self::node_down), only if the node's current
    /// incarnation is `only` (when given): false, changing nothing, if it
    /// is another one or the node is down already.
    fn incarnation_down(
        &self,
        association: &Association,
        only: Option<u64>,
        reason: DisassociationReason,
        quarantine: Option<&str>,
    ) -> bool {
        let mut control = lock(&association.control);
        if association.is_down() || only.is_some_and(|uid| control.uid != Some(uid)) {
            return false;
        }
        association.set_down(true);
        let uid = control.uid;
        if let Some(uid) = uid {
            control.dead.insert(uid);
            if quarantine.is_some() {
                control.quarantined.insert(uid);
            }
        }
        let unacked = control.outbox.reset();
        association.deaths.fetch_add(1, Ordering::Relaxed);
        for lane in association.lanes() {
            lane.discard_queued(self);
            lane.drop_connection();
        }
        drop(control);
        let remote = &association.remote;
        if let Some(uid) = uid {
            // Before any event tells of it: nothing the incarnation sent
            // reaches an actor once it is known to be gone.
            self.end_inbound_connections(remote, uid);
        }
        match (quarantine, uid) {
            (Some(why), Some(uid)) => {
                tracing::error!(%remote, uid, "quarantined incarnation {uid} of {remote}: {why}; it can never associate again, a restart of that node can");
                self.publish(RemotingEvent::Quarantined {
                    remote: remote.clone(),
                    uid,
                    reason: why.to_string(),
                });
            }
            _ => log_limited!(warn, %remote, ?uid, "node {remote} is gone: {reason}"),
        }
        self.publish(RemotingEvent::Disassociated {
            remote: remote.clone(),
            reason: reason.clone(),
        });
        if !unacked.is_empty() {
            tracing::debug!(%remote, count = unacked.len(), "unacknowledged system messages dropped; the watches among them end with the address");
        }
        self.address_terminated(association, uid, reason);
        true
    }

    /// Quarantines the node's current incarnation (the detector fired, or
    /// its system messages are not acknowledged).
    fn quarantine(&self, association: &Association, why: &str) {
        self.node_down(association, DisassociationReason::Quarantined, Some(why));
    }

    /// The failure detector gave `node` up: a member is reported to the
    /// membership authority (`authority.rs`), any other node goes down.
    fn node_unreachable(&self, node: &Address) {
        let Some(association) = self.associations().find(node) else {
            return;
        };
        if self.reported_to_authority(&association, MemberReport::Unreachable) {
            return;
        }
        // Its incarnation, if a handshake told it, is quarantined; the
        // events name the detector as the reason.
        let why = MemberReport::Unreachable.to_string();
        let quarantine = lock(&association.control)
            .uid
            .is_some()
            .then_some(why.as_str());
        self.node_down(&association, DisassociationReason::Unreachable, quarantine);
    }

    /// The failure detector hears `node` again: only a member's authority
    /// is told (any other node was given up at `Unreachable`).
    fn node_reachable(&self, node: &Address) {
        if let Some(association) = self.associations().find(node) {
            self.reported_to_authority(&association, MemberReport::Reachable);
        }
    }

    /// Quarantines every incarnation whose oldest unacknowledged system
    /// message has waited longer than `give_up_system_message_after`.
    fn give_up_overdue_system_messages(&self, now: Instant) {
        let limit = self.settings().give_up_system_message_after;
        for association in self.associations().all() {
            let association = &*association;
            let overdue = lock(&association.control)
                .outbox
                .oldest_wait(now)
                .is_some_and(|waited| waited > limit);
            let report = MemberReport::SystemMessagesOverdue { limit };
            if overdue && !self.reported_to_authority(association, report.clone()) {
                self.quarantine(association, &report.to_string());
            }
        }
    }

    /// The peer announced that incarnation `uid` leaves (its Disassociate).
    /// Nothing changes if `uid` is no longer the current incarnation: a
    /// new one may shake hands at any moment, even while this runs, so
    /// the verdict is bound to `uid` until the association is taken down.
    fn peer_left(&self, association: &Association, uid: u64, reason: DisassociationReason) {
        if lock(&association.control).uid != Some(uid) {
            return;
        }
        self.incarnation_left(association, Some(uid), reason);
    }

    /// An inbound connection from incarnation `uid` started.
    fn reader_started(&self, association: &Association, uid: u64) {
        lock(&association.readers).entry(uid).or_default().open += 1;
        // The node connects again: it started its side of an association
        // this node stopped for idleness, and expects heartbeats back.
        if association.is_retired() {
            self.revive(association);
        }
    }

    /// Incarnation `uid` said, on one of its connections, that it shuts
    /// down. Taken as its end once all its connections have ended.
    fn goodbye_heard(&self, association: &Association, uid: u64) {
        if let Some(readers) = lock(&association.readers).get_mut(&uid) {
            readers.said_goodbye = true;
        }
        // Under the lock a new incarnation's handshake takes to clear the
        // flag, so an old incarnation's goodbye cannot mark the new one.
        let control = lock(&association.control);
        if control.uid == Some(uid) {
            association.leaving.store(true, Ordering::Relaxed);
        }
        drop(control);
    }

    /// An inbound connection from incarnation `uid` ended: if it was the
    /// last one and the incarnation said goodbye, the incarnation is gone.
    fn reader_ended(&self, association: &Association, uid: u64) {
        let left = {
            let mut readers = lock(&association.readers);
            let Some(these) = readers.get_mut(&uid) else {
                return;
            };
            these.open = these.open.saturating_sub(1);
            if these.open > 0 {
                return;
            }
            readers.remove(&uid).is_some_and(|r| r.said_goodbye)
        };
        if left && !self.is_shut_down() {
            self.peer_left(association, uid, DisassociationReason::Shutdown);
        }
    }

    /// The node's current incarnation leaves (`Shutdown`) or refuses this
    /// node for good (`Quarantined`: it is quarantined here in turn).
    /// A member's refusal is reported to the membership authority instead.
    fn peer_left_for(&self, association: &Association, reason: DisassociationReason) {
        self.incarnation_left(association, None, reason);
    }

    /// [`peer_left_for`](Self::peer_left_for), only if the node's current
    /// incarnation is `only` (when given) by the time it is taken down.
    fn incarnation_left(
        &self,
        association: &Association,
        only: Option<u64>,
        reason: DisassociationReason,
    ) {
        if reason == DisassociationReason::Quarantined
            && self.reported_to_authority(association, MemberReport::QuarantinedThisNode)
        {
            return;
        }
        let quarantine =
            (reason == DisassociationReason::Quarantined).then_some("it quarantined this node");
        self.incarnation_down(association, only, reason, quarantine);
    }

    /// Every watch of an actor of `association`'s node ends with
    /// `Terminated`; published as `AddressTerminated`.
    fn address_terminated(
        &self,
        association: &Association,
        uid: Option<u64>,
        reason: DisassociationReason,
    ) {
        crate::transport::outbound::lane::gone_refs::forget_refs_of_gone_incarnations(
            self,
            association,
        );
        let ended = self.end_watches_of_node(&association.remote);
        tracing::debug!(remote = %association.remote, ?uid, ended, "address terminated");
        self.publish(RemotingEvent::AddressTerminated {
            remote: association.remote.clone(),
            uid,
            reason,
        });
    }

    /// Quarantines the peer of `association` if its control lane refused a
    /// frame for its bound (`limits.max_control_queue_bytes`). Called with
    /// no lock held.
    fn check_control_queue(&self, association: &Association) {
        let lane = association.lane(crate::wire::Lane::Control);
        if lane.take_overflow() {
            let report = MemberReport::ControlQueueOverflow {
                limit_bytes: self.settings().limits.max_control_queue_bytes,
            };
            // A member's lane goes on refusing what exceeds its bound.
            if !self.reported_to_authority(association, report.clone()) {
                self.quarantine(association, &report.to_string());
            }
        }
    }
}

impl<C: LivenessContext> Incarnations for C {}

#[cfg(test)]
mod tests;
