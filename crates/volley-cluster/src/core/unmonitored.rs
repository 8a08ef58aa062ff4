//! A member of the table that SWIM does not know is unreachable once it
//! has gone unknown for as long as SWIM takes to judge a silent member.
//!
//! Why: foca probes only the members it knows, and volley's
//! reachability is foca's view, so a member whose record reached this
//! node (by gossip or anti-entropy) but whose SWIM identity never did
//! was never probed, never suspected, and counted as reachable for ever.
//! The process tests met it on a loaded machine: a node that joined just
//! before a 3/2 partition knew every member's record, Up, but foca had
//! taken in only two of them; cut off, it never saw the other two
//! unreachable, its side took itself for the majority (3 of 5 reachable)
//! and downed the third, and both sides lived on. Akka's failure detector
//! watches every member of the membership from the moment it is added,
//! and one that never answers is unreachable `expected-response-after`
//! plus the acceptable pause later; here the grace is `probe_period` plus
//! `suspect_to_down_after`, the least SWIM takes from a member's first
//! failed probe to its verdict. Meanwhile the tick's announces to members
//! foca does not know (`sync.rs`) try to bring it in; once foca knows it,
//! foca's view rules again, and the member is reachable unless foca holds
//! it down.

use std::collections::BTreeSet;

use foca::State;

use super::join::JoinPlan;
use super::ClusterCore;
use crate::member::{ClusterEvent, MemberStatus, UniqueAddress};

impl ClusterCore {
    /// Judges the members foca does not know (on the membership's tick):
    /// unreachable past the grace, reachable again once foca holds them
    /// active.
    pub(super) fn track_unmonitored(&mut self, events: &mut Vec<ClusterEvent>) {
        if self.join != JoinPlan::Joined || self.left_swim {
            self.unmonitored_since.clear();
            return;
        }
        let now = self.outbox.now;
        let (known, active) = self.swim_known();
        let unknown_records: Vec<_> = {
            let knowledge = self.knowledge.lock();
            knowledge
                .table
                .records()
                .filter(|record| record.status < MemberStatus::Down)
                .filter(|record| {
                    let member = record.unique_address();
                    member != self.me && !known.contains(&member)
                })
                .cloned()
                .collect()
        };
        let unknown: BTreeSet<UniqueAddress> = unknown_records
            .iter()
            .map(|record| record.unique_address())
            .collect();
        self.unmonitored_since
            .retain(|member, _| unknown.contains(member));
        for member in self.judged_unmonitored.clone() {
            if active.contains(&member) || !unknown.contains(&member) {
                self.judged_unmonitored.remove(&member);
                if active.contains(&member) && self.unreachable.remove(&member) {
                    if let Some(record) = self.live_record(&member) {
                        events.push(ClusterEvent::ReachableMember { member: record });
                    }
                }
            }
        }
        let grace = self.probe_period.saturating_add(self.suspect_to_down_after);
        for record in unknown_records {
            let member = record.unique_address();
            let since = *self.unmonitored_since.entry(member.clone()).or_insert(now);
            if now >= since.saturating_add(grace) && self.unreachable.insert(member.clone()) {
                self.judged_unmonitored.insert(member);
                events.push(ClusterEvent::UnreachableMember { member: record });
            }
        }
    }

    /// The incarnations foca knows in any state, and those it holds
    /// active (alive or suspect).
    fn swim_known(&self) -> (BTreeSet<UniqueAddress>, BTreeSet<UniqueAddress>) {
        let mut known = BTreeSet::new();
        let mut active = BTreeSet::new();
        for member in self.foca.iter_membership_state() {
            let address = UniqueAddress::of(member.id());
            if member.state() != State::Down {
                active.insert(address.clone());
            }
            known.insert(address);
        }
        (known, active)
    }
}
