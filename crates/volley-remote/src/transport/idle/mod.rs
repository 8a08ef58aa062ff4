//! Stopping idle associations, and starting them again on demand, as
//! Artery's `stop-idle-outbound-after`.
//!
//! An association that carried nothing but heartbeats, either way, for
//! `stop_idle_outbound_after`, with no remote watch and no
//! unacknowledged system message between the two nodes, is stopped: a
//! Disassociate(Idle) goes out last on its control lane, its three
//! connections close, its writer and heartbeat tasks end, and its buffers
//! are freed. A node that talked to many peers once does not keep three
//! sockets, four tasks and a heartbeat stream per peer for ever.
//!
//! The association table then lets go of it (`Associations::release`),
//! so a stopped association is removed, with its failure detector, once
//! no ref, reply route or reader holds it any more. One that something
//! still holds keeps what it knows of the node's incarnations, so nothing
//! a ref holds goes stale, and the send path is untouched: a stopped
//! association's lanes admit nothing (their limit is 0, as for a node that
//! is gone), and the refused send, off the hot path, starts the
//! association and sends again. Control traffic (system messages, acks)
//! starts it the same way; heartbeats do not. An association that
//! remembers a quarantined incarnation stays held, so that the
//! incarnation stays refused, for `remove_quarantined_association_after`
//! (Artery's `remove-quarantined-association-after`, 1 h), and is then let
//! go of like the others.
//!
//! Heartbeats stop with the association, so the peer must not take the
//! silence for a crash: the Disassociate(Idle) pauses the peer's detector
//! of this node until its next heartbeat. Both ends see the same traffic,
//! so the peer stops its own association about as soon; until then its
//! heartbeats still arrive here, and are still judged. Anything that
//! arrives from the peer but heartbeats, and any new connection from it,
//! starts the association here again, so a node that starts talking again
//! gets heartbeats back as before.
//!
//! Idleness is measured without touching the send path: a user lane counts
//! the buffers its writers take (under the lock they already hold), the
//! control lane each PDU but heartbeats, and an inbound connection marks
//! its association once per read. The failure monitor compares the counts
//! on each of its ticks.

pub(crate) mod proof;

use std::sync::Arc;
use std::time::Instant;

use crate::transport::control::ControlContext;
use crate::transport::events::{DisassociationReason, RemotingEvent};
use crate::transport::liveness::heartbeat;
use crate::transport::outbound::association::{Association, Tasks};
use crate::transport::outbound::lane::OutboundLane;
use crate::transport::outbound::writer;
use crate::transport::outbound::OutboundContext;
use crate::transport::support::lock;
use crate::wire::{Disassociate, DisassociateReason, Lane, Pdu};

impl Association {
    /// True while the association is stopped for idleness.
    pub(crate) fn is_retired(&self) -> bool {
        self.lane(Lane::Control).is_retired()
    }

    /// Notes that something but heartbeats arrived from the node; starts
    /// the association again if it was stopped.
    #[inline]
    pub(crate) fn heard(&self, core: &(impl OutboundContext + ?Sized)) {
        use std::sync::atomic::{fence, Ordering};
        if !self.heard.load(Ordering::Relaxed) {
            self.heard.store(true, Ordering::Relaxed);
            // Pairs with the fence in `retire`: either this read sees the
            // association stopped, or `retire` sees the flag (and starts
            // it again). Once per read after each check, not per read.
            fence(Ordering::SeqCst);
        }
        if self.is_retired() {
            core.revive(self);
        }
    }

    pub(super) fn activity(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.lanes()[i].activity())
    }
}

/// What stopping and starting associations needs of the rest of the
/// transport, on top of the control protocols (a remote watch or an
/// unacknowledged system message keeps an association running).
pub(crate) trait IdleContext: ControlContext {
    /// This node's context, owned, for the tasks an association starts;
    /// `None` once remoting is shut down.
    fn owned(&self) -> Option<Arc<Self>>;
}

/// Stopping idle associations and starting them again, for any node with
/// an idle context.
pub(crate) trait Idleness: IdleContext {
    /// Starts whichever of the association's writer tasks and heartbeat
    /// task do not run. `tasks` is the association's, locked.
    fn start_tasks(&self, association: &Association, tasks: &mut Tasks) {
        let Some(me) = self.owned() else {
            return;
        };
        let runtime = self.system().runtime_handle();
        for (i, lane) in association.lanes().iter().enumerate() {
            if !tasks.writers[i] {
                tasks.writers[i] = true;
                self.track(runtime.spawn(writer::run_writer(lane.clone(), me.clone())));
            }
        }
        if !tasks.heartbeat {
            tasks.heartbeat = true;
            let control = association.lane(Lane::Control).clone();
            self.track(runtime.spawn(heartbeat::run_heartbeats(control, me)));
        }
    }

    /// Starts a stopped association again (nothing if it runs).
    #[cold]
    fn start_again(&self, association: &Association) {
        if self.is_shut_down() {
            return;
        }
        let mut tasks = lock(&association.tasks);
        if !tasks.retired {
            return;
        }
        tasks.retired = false;
        tasks.since = None;
        tasks.held_for_quarantine = None;
        tasks.renew_proof_window(Instant::now());
        for lane in association.lanes() {
            lane.unretire();
        }
        self.associations().keep(association);
        self.reachability()
            .resume(&association.remote, Instant::now());
        self.start_tasks(association, &mut tasks);
        drop(tasks);
        tracing::debug!(remote = %association.remote, "association started again after idling");
    }

    /// Whether the writer task of `lane` may end: true, and noted, if its
    /// association is stopped; false if it was started again meanwhile.
    fn writer_may_end(&self, lane: &OutboundLane) -> bool {
        self.task_may_exit(lane, |tasks| &mut tasks.writers[lane.lane as usize])
    }

    /// Whether the heartbeat task of the association of `control` may end.
    fn heartbeat_may_end(&self, control: &OutboundLane) -> bool {
        self.task_may_exit(control, |tasks| &mut tasks.heartbeat)
    }

    fn task_may_exit(
        &self,
        lane: &OutboundLane,
        running: impl FnOnce(&mut Tasks) -> &mut bool,
    ) -> bool {
        let Some(association) = lane.association() else {
            // Gone with every task's reason to run.
            return true;
        };
        let mut tasks = lock(&association.tasks);
        if !tasks.retired {
            return false;
        }
        *running(&mut tasks) = false;
        true
    }

    /// Stops every association idle for `stop_idle_outbound_after` at
    /// `now` (run by the failure monitor on each tick).
    fn stop_idle_associations(&self, now: Instant) {
        let after = self.settings().stop_idle_outbound_after;
        if after.is_zero() || self.is_shut_down() {
            return;
        }
        for address in self.associations().sweep() {
            self.reachability().forget(&address);
        }
        for association in self.associations().all() {
            let association = &*association;
            // A node that is gone (it left, or its incarnation was given
            // up) is stopped like an idle one once nothing has moved for
            // the same time, so that the table lets go of it: one that
            // remembers a quarantined incarnation stays held for a while
            // (`retire`, `let_go_of_old_quarantine`).
            if association.is_retired() {
                self.let_go_of_old_quarantine(association, now);
                continue;
            }
            let heard = association
                .heard
                .swap(false, std::sync::atomic::Ordering::Relaxed);
            let activity = association.activity();
            {
                let mut tasks = lock(&association.tasks);
                if heard || tasks.since.is_none() || tasks.seen != activity {
                    tasks.seen = activity;
                    tasks.since = Some(now);
                    continue;
                }
                if tasks.since.is_some_and(|since| now - since < after) {
                    continue;
                }
            }
            // Checked without the tasks lock, which is taken after
            // `control`: what changes after the check either reaches a
            // lane (and `retire` sees it) or starts the association again.
            if self.busy(association) {
                continue;
            }
            self.retire(association, activity, now, DisassociationReason::Idle);
        }
    }

    /// Lets the table go of a stopped association that has remembered a
    /// quarantined incarnation for `remove_quarantined_association_after`
    /// (Artery's `remove-quarantined-association-after`).
    fn let_go_of_old_quarantine(&self, association: &Association, now: Instant) {
        let after = self.settings().remove_quarantined_association_after;
        if after.is_zero() {
            return;
        }
        let mut tasks = lock(&association.tasks);
        let Some(since) = tasks.held_for_quarantine else {
            return;
        };
        if !tasks.retired || now.saturating_duration_since(since) < after {
            return;
        }
        tasks.held_for_quarantine = None;
        // Under the tasks lock, as in `retire`.
        self.associations().release(association);
        tracing::debug!(remote = %association.remote, "a stopped association that remembered a quarantined incarnation is let go of");
    }

    /// Something between the two nodes still needs the association: a
    /// remote watch either way (its failure detection needs heartbeats),
    /// an unacknowledged system message, or a node leaving.
    fn busy(&self, association: &Association) -> bool {
        let leaving = association
            .leaving
            .load(std::sync::atomic::Ordering::Relaxed);
        // A node that has left is not leaving any more.
        (leaving && !association.is_down())
            || !lock(&association.control).outbox.unacked.is_empty()
            || self.remote_watches().involves(&association.remote)
    }

    /// Stops the association if its lanes are still as idle as `activity`
    /// says; `why` is `Idle`, or `Unreachable` for one whose address never
    /// answered (`idle/proof.rs`), which gets no goodbye.
    fn retire(
        &self,
        association: &Association,
        activity: [u64; 3],
        now: Instant,
        why: DisassociationReason,
    ) {
        // `control` is taken before `tasks`, never after.
        let remembers_quarantine = !lock(&association.control).quarantined.is_empty();
        let mut tasks = lock(&association.tasks);
        if tasks.retired || tasks.seen != activity {
            return;
        }
        let goodbye = Pdu::Disassociate(Disassociate {
            reason: DisassociateReason::Idle,
            text: "the association was idle",
        });
        let down = association.is_down();
        let idle = why == DisassociationReason::Idle;
        if down {
            // Nothing queued for a node that is gone can reach it (what it
            // held was dropped when it went; heartbeats pile up since).
            for lane in association.lanes() {
                lane.discard_queued(self);
            }
        }
        // The user lanes first: the goodbye goes out only if all stop.
        let order = [Lane::Ordinary, Lane::Large, Lane::Control];
        let mut stopped = Vec::with_capacity(3);
        for lane in order {
            let l = association.lane(lane);
            // A node that is gone, or never reached, gets no goodbye.
            let last = (lane == Lane::Control && !down && idle).then_some(&goodbye);
            if !l.retire(activity[lane as usize], last) {
                break;
            }
            stopped.push(l);
        }
        if stopped.len() < order.len() {
            for lane in stopped {
                lane.unretire();
            }
            tasks.since = None;
            return;
        }
        tasks.retired = true;
        // Under the tasks lock, as `revive`'s `keep`, so the two cannot
        // interleave (the table's lock is taken after a tasks lock).
        match remembers_quarantine {
            false => self.associations().release(association),
            true => tasks.held_for_quarantine = Some(now),
        }
        drop(tasks);
        tracing::debug!(remote = %association.remote, down, "association stopped: {why}");
        if !down {
            // A node that is gone was reported so when it went.
            self.publish(RemotingEvent::Disassociated {
                remote: association.remote.clone(),
                reason: why,
            });
        }
        // Something that arrived while it stopped, whose reader did not yet
        // see it stopped (see `Association::heard`), starts it again.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if association.heard.load(std::sync::atomic::Ordering::Relaxed) {
            self.start_again(association);
        }
    }
}

impl<C: IdleContext> Idleness for C {}
