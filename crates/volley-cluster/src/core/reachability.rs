//! Reachability from foca's notifications (design §3.5), the old
//! incarnation of a restarted node downed at once, and a member whose
//! connection the transport lost suspected at once.
//!
//! Why the last: foca probes one member per `probe_period`, in a shuffled
//! round, so a member that died waits up to a round (two periods with two
//! survivors) before anyone even suspects it. A process that dies has its
//! sockets closed by its kernel, and the transport sees that at once. The
//! hint only raises SWIM's suspicion, which the member refutes if it is
//! alive (a connection reset by a middlebox, say), so it can make
//! detection sooner but never downs a member that answers: the verdict
//! still waits `suspect_to_down_after`. foca has no call to suspect a
//! member, so the core applies the Suspect update foca would have made
//! and submits the timer foca would have armed, through the runtime
//! interface it hands foca (with foca's current timer token, without
//! which foca ignores the timer).

use std::iter;
use std::time::Duration;

use foca::{Member, Runtime, State, Timer};

use super::{ClusterCore, RefusedBy};
use crate::event::MembershipEvent;
use crate::member::{ClusterEvent, MemberRecord, MemberStatus, UniqueAddress};

impl ClusterCore {
    /// Follows foca's view: a member it declared down is unreachable, one
    /// back (usually under a renewed epoch) is reachable again, and the
    /// old incarnation of a node that restarted at its address is Down.
    pub(super) fn track_reachability(
        &mut self,
        swim_events: &[MembershipEvent],
        events: &mut Vec<ClusterEvent>,
    ) -> Result<(), RefusedBy> {
        for swim_event in swim_events {
            match swim_event {
                MembershipEvent::MemberUnreachable { member } => {
                    let member = UniqueAddress::of(member);
                    if self.knowledge.lock().table.is_removed(&member) {
                        // A removed member leaving the SWIM group, as it
                        // should: nothing to track.
                        continue;
                    }
                    if self.unreachable.insert(member.clone()) {
                        if let Some(member) = self.live_record(&member) {
                            events.push(ClusterEvent::UnreachableMember { member });
                        }
                    }
                }
                MembershipEvent::MemberReachable { member } => {
                    let member = UniqueAddress::of(member);
                    if self.unreachable.remove(&member) {
                        if let Some(member) = self.live_record(&member) {
                            events.push(ClusterEvent::ReachableMember { member });
                        }
                    }
                }
                MembershipEvent::IncarnationReplaced { old, .. } => {
                    let old = UniqueAddress::of(old);
                    self.unreachable.insert(old.clone());
                    if let Some(record) = self.live_record(&old) {
                        self.publish(record.with_status(MemberStatus::Down))?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Suspects `member` now, if foca holds that incarnation alive: the
    /// transport lost its connection to it.
    pub(super) fn suspect_at_once(
        &mut self,
        now: Duration,
        member: &UniqueAddress,
    ) -> Result<(), RefusedBy> {
        let Some(token) = self.outbox.timer_token else {
            return Ok(());
        };
        let cooling = self
            .hinted
            .get(member)
            .is_some_and(|at| now < at.saturating_add(self.suspect_to_down_after));
        if cooling {
            return Ok(());
        }
        let alive = self
            .foca
            .iter_membership_state()
            .find(|known| known.state() == State::Alive && UniqueAddress::of(known.id()) == *member)
            .map(|known| (known.id().clone(), known.incarnation()));
        let Some((id, incarnation)) = alive else {
            return Ok(());
        };
        self.hinted.insert(member.clone(), now);
        let suspect = Member::new(id.clone(), incarnation, State::Suspect);
        self.foca
            .apply_many(iter::once(suspect), true, &mut self.outbox)?;
        let after = self.suspect_to_down_after;
        let timer = Timer::ChangeSuspectToDown {
            member_id: id,
            incarnation,
            token,
        };
        self.outbox.submit_after(timer, after);
        self.push_broadcasts = true;
        Ok(())
    }

    /// The record of a member that is neither Down nor Removed.
    pub(super) fn live_record(&self, member: &UniqueAddress) -> Option<MemberRecord> {
        let knowledge = self.knowledge.lock();
        knowledge
            .table
            .get(member)
            .filter(|record| record.status < MemberStatus::Down)
            .cloned()
    }
}
