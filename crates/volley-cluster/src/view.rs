//! Turns foca's notifications into [`MembershipEvent`]s.
//!
//! foca reports changes to its active set per identity; volley's members
//! are incarnations (an address and a uid), whose identity changes epoch
//! when foca renews it. foca does not say whether an active member is new
//! or back, does not say that a renamed member keeps its liveness, and
//! reports nothing when it forgets a down member, so this view remembers
//! each address's incarnation and liveness to tell those apart.

use std::collections::{BTreeMap, VecDeque};

use foca::{Identity, OwnedNotification};

use crate::event::MembershipEvent;
use crate::node_id::{Addr, NodeId};

/// What this node last knew of one incarnation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Liveness {
    /// Known, never active yet.
    Pending,
    /// Active in foca's view.
    Reachable,
    /// Declared down by foca.
    Unreachable,
}

/// The incarnation at each address and its liveness.
#[derive(Debug, Default)]
pub(crate) struct MembershipView {
    members: BTreeMap<Addr, (NodeId, Liveness)>,
}

impl MembershipView {
    /// Maps one call's notifications, in foca's order, onto events.
    pub(crate) fn apply(
        &mut self,
        mut notifications: VecDeque<OwnedNotification<NodeId>>,
        events: &mut Vec<MembershipEvent>,
    ) {
        while let Some(notification) = notifications.pop_front() {
            match notification {
                OwnedNotification::MemberUp(id) => self.member_up(id, events),
                OwnedNotification::MemberDown(id) => self.member_down(id, events),
                OwnedNotification::Rename(old, new) => {
                    // foca follows a rename with the new identity's
                    // MemberUp or MemberDown only if its liveness changed.
                    let liveness_changes = matches!(
                        notifications.front(),
                        Some(OwnedNotification::MemberUp(next) | OwnedNotification::MemberDown(next))
                            if *next == new
                    );
                    self.rename(old, new, liveness_changes, events);
                }
                OwnedNotification::Active => events.push(MembershipEvent::Joined),
                OwnedNotification::Idle => events.push(MembershipEvent::Alone),
                OwnedNotification::Defunct => events.push(MembershipEvent::Defunct),
                OwnedNotification::Rejoin(identity) => {
                    events.push(MembershipEvent::Rejoined { identity })
                }
            }
        }
    }

    /// Reports `member` removed if foca no longer knows its address.
    pub(crate) fn forget_if_gone(
        &mut self,
        member: &NodeId,
        still_known: bool,
        events: &mut Vec<MembershipEvent>,
    ) {
        if still_known {
            return;
        }
        let addr = member.addr();
        if let Some((known, _)) = self.members.get(&addr) {
            if known.same_incarnation(member) {
                let (member, _) = self.members.remove(&addr).expect("just found");
                events.push(MembershipEvent::MemberRemoved { member });
            }
        }
    }

    fn member_up(&mut self, id: NodeId, events: &mut Vec<MembershipEvent>) {
        let before = self.set(&id, Liveness::Reachable);
        match before {
            Some(Liveness::Reachable) => {}
            Some(Liveness::Unreachable) => {
                events.push(MembershipEvent::MemberReachable { member: id })
            }
            None | Some(Liveness::Pending) => events.push(MembershipEvent::MemberUp { member: id }),
        }
    }

    fn member_down(&mut self, id: NodeId, events: &mut Vec<MembershipEvent>) {
        if self.set(&id, Liveness::Unreachable) == Some(Liveness::Reachable) {
            events.push(MembershipEvent::MemberUnreachable { member: id });
        }
    }

    fn rename(
        &mut self,
        old: NodeId,
        new: NodeId,
        liveness_changes: bool,
        events: &mut Vec<MembershipEvent>,
    ) {
        let old_liveness = match self.members.get(&old.addr()) {
            Some((known, liveness)) if known.same_incarnation(&old) => *liveness,
            _ => Liveness::Pending,
        };
        if new.same_incarnation(&old) {
            // A renewed epoch: the same member, its liveness kept until
            // the MemberUp or MemberDown that may follow.
            self.members.insert(new.addr(), (new, old_liveness));
            return;
        }
        events.push(MembershipEvent::IncarnationReplaced {
            old,
            new: new.clone(),
        });
        if liveness_changes || old_liveness != Liveness::Reachable {
            self.members.insert(new.addr(), (new, Liveness::Pending));
        } else {
            // Active before and after, so foca sends no MemberUp for the
            // new incarnation: report it here.
            self.members
                .insert(new.addr(), (new.clone(), Liveness::Reachable));
            events.push(MembershipEvent::MemberUp { member: new });
        }
    }

    /// Records `id`'s liveness and returns its incarnation's previous one.
    fn set(&mut self, id: &NodeId, liveness: Liveness) -> Option<Liveness> {
        self.members
            .insert(id.addr(), (id.clone(), liveness))
            .filter(|(known, _)| known.same_incarnation(id))
            .map(|(_, before)| before)
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
