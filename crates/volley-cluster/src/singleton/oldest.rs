//! Who is oldest: each node's view of the members that may host the
//! singleton, kept from the cluster's events, ordered by age as Akka's
//! `Member.ageOrdering` (the up-number, then the address).

use std::collections::{BTreeMap, BTreeSet};

use crate::member::{ClusterEvent, ClusterState, MemberRecord, MemberStatus, UniqueAddress};

/// The members this node knows, the ones removed after leaving that may
/// still owe a hand-over, and the leavers that handed over.
#[derive(Debug, Default, Clone)]
pub(crate) struct Membership {
    records: BTreeMap<UniqueAddress, MemberRecord>,
    left: BTreeMap<UniqueAddress, MemberRecord>,
    released: BTreeSet<UniqueAddress>,
    /// Members removed after being downed, until their margin passed.
    downed: BTreeMap<UniqueAddress, MemberRecord>,
}

/// True if `a` became Up before `b` (a member never Up is youngest).
pub(crate) fn is_older(a: &MemberRecord, b: &MemberRecord) -> bool {
    age(a) < age(b)
}

fn age(record: &MemberRecord) -> (u32, UniqueAddress) {
    let number = if record.up_number == 0 {
        u32::MAX
    } else {
        record.up_number
    };
    (number, record.unique_address())
}

/// True if the member may host a singleton of `role`.
pub(crate) fn has_role(record: &MemberRecord, role: Option<&str>) -> bool {
    role.is_none_or(|role| record.roles.contains(role))
}

impl Membership {
    /// The members of a published state.
    pub(crate) fn from_state(state: &ClusterState) -> Self {
        let mut membership = Self::default();
        for record in &state.members {
            membership.upsert(record);
        }
        membership
    }

    /// Applies one event; true if a record changed.
    pub(crate) fn apply(&mut self, event: &ClusterEvent) -> bool {
        if let Some(member) = event.status_member() {
            return self.upsert(member);
        }
        match event {
            ClusterEvent::MemberRemoved {
                member,
                previous_status,
            } => self.remove(member, *previous_status),
            _ => false,
        }
    }

    /// Merges in `record` from the cluster's table. Up-numbers can grow
    /// after a member is Up, with no event: two leaders that each numbered
    /// a round of one formation, whose records merge to the greater
    /// number. Events alone would then keep an age order the table no
    /// longer has, and two nodes could each wait for the other to run
    /// the singleton.
    /// Members the events have not brought yet are left to them.
    pub(crate) fn refresh(&mut self, record: &MemberRecord) -> bool {
        self.records.contains_key(&record.unique_address()) && self.upsert(record)
    }

    fn upsert(&mut self, record: &MemberRecord) -> bool {
        let key = record.unique_address();
        let merged = match self.records.get(&key) {
            Some(known) => known.merged(record),
            None => record.clone(),
        };
        self.records.insert(key, merged.clone()) != Some(merged)
    }

    fn remove(&mut self, record: &MemberRecord, previous: MemberStatus) -> bool {
        let key = record.unique_address();
        let known = self.records.remove(&key);
        let last = known.map_or_else(|| record.clone(), |k| k.merged(record));
        // A member removed after a graceful leave may still run the
        // singleton (the leader removes an Exiting member at the next
        // convergence, whatever its hand-over); one removed from Down was
        // downed by the resolver and has stopped.
        let leaver = matches!(previous, MemberStatus::Leaving | MemberStatus::Exiting);
        if leaver && last.up_number > 0 && !self.released.contains(&key) {
            self.left.insert(key, last);
        } else if previous == MemberStatus::Down && last.up_number > 0 {
            self.downed.insert(key, last);
        }
        true
    }

    /// The record of `member`, if it is not removed.
    pub(crate) fn record(&self, member: &UniqueAddress) -> Option<&MemberRecord> {
        self.records.get(member)
    }

    /// The oldest Up member with `role`: where the singleton belongs
    /// (never a WeaklyUp member, as in Akka).
    pub(crate) fn oldest_up(&self, role: Option<&str>) -> Option<&MemberRecord> {
        self.records
            .values()
            .filter(|r| r.status == MemberStatus::Up && has_role(r, role))
            .min_by_key(|r| age(r))
    }

    /// Joining and WeaklyUp members with `role`: the leader moves them
    /// Up at its next convergence, numbered in address order.
    pub(crate) fn joining<'a>(
        &'a self,
        role: Option<&'a str>,
    ) -> impl Iterator<Item = &'a MemberRecord> + 'a {
        self.records
            .values()
            .filter(move |r| r.status.is_not_yet_up() && has_role(r, role))
    }

    /// Members with `role`, older than `than`, in `status`, that have
    /// not handed over.
    pub(crate) fn older_in<'a>(
        &'a self,
        than: &'a MemberRecord,
        role: Option<&'a str>,
        statuses: &'a [MemberStatus],
    ) -> impl Iterator<Item = &'a MemberRecord> + 'a {
        self.records.values().filter(move |r| {
            statuses.contains(&r.status)
                && has_role(r, role)
                && is_older(r, than)
                && !self.released.contains(&r.unique_address())
        })
    }

    /// Members with `role`, older than `than`, removed after leaving and
    /// not yet released.
    pub(crate) fn older_left<'a>(
        &'a self,
        than: &'a MemberRecord,
        role: Option<&'a str>,
    ) -> impl Iterator<Item = &'a MemberRecord> + 'a {
        older_with_role(self.left.values(), than, role)
    }

    /// Members with `role`, older than `than`, removed from Down whose
    /// removal margin has not passed.
    pub(crate) fn older_downed<'a>(
        &'a self,
        than: &'a MemberRecord,
        role: Option<&'a str>,
    ) -> impl Iterator<Item = &'a MemberRecord> + 'a {
        older_with_role(self.downed.values(), than, role)
    }

    /// The removal margin of a downed member has passed.
    pub(crate) fn margin_passed(&mut self, member: &UniqueAddress) {
        self.downed.remove(member);
    }

    /// Marks a leaver as handed over: it answered, or stopped answering
    /// for the whole retry budget. It is never waited for again.
    pub(crate) fn release(&mut self, member: &UniqueAddress) {
        self.left.remove(member);
        self.released.insert(member.clone());
    }
}

/// The members of `records` with `role` that are older than `than`.
fn older_with_role<'a>(
    records: impl Iterator<Item = &'a MemberRecord> + 'a,
    than: &'a MemberRecord,
    role: Option<&'a str>,
) -> impl Iterator<Item = &'a MemberRecord> + 'a {
    records.filter(move |r| has_role(r, role) && is_older(r, than))
}

#[cfg(test)]
#[path = "oldest_tests.rs"]
pub(crate) mod tests;
