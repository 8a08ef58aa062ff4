//! Reachability from foca's notifications (design §3.5), and the old
//! incarnation of a restarted node downed at once.

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

    /// The record of a member that is neither Down nor Removed.
    fn live_record(&self, member: &UniqueAddress) -> Option<MemberRecord> {
        let knowledge = self.knowledge.lock();
        knowledge
            .table
            .get(member)
            .filter(|record| record.status < MemberStatus::Down)
            .cloned()
    }
}
