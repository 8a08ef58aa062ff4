//! The members a coordinator's regions run on, kept from the cluster's
//! events, and when a stopped region's shards may go elsewhere.
//!
//! A region's shards are freed only once nothing of it can still run.
//! Pekko's coordinator frees them on the region's `Terminated`, which in
//! a cluster comes when the member is removed, and waits
//! `down-removal-margin` more for a region that did not shut down
//! gracefully: the removed side needs that long to see itself downed or
//! removed and stop its region. A member that is merely unreachable is
//! neither, so its shards stay.

use std::collections::{HashMap, HashSet};

use crate::member::{ClusterEvent, ClusterState, MemberRecord, MemberStatus, UniqueAddress};

/// When a stopped region's shards are free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhenFree {
    /// Now: the region's actor itself stopped on a member that stays.
    Now,
    /// When its member is removed (it is leaving or downed).
    AtRemoval,
    /// `down_removal_margin` from now: its member was removed, or is not
    /// known at all.
    AfterMargin,
}

/// A member's address as an actor path names it: `host:port`.
pub(crate) fn authority_of(member: &UniqueAddress) -> String {
    format!("{}:{}", member.host, member.port)
}

fn authority(record: &MemberRecord) -> String {
    authority_of(&record.unique_address())
}

/// The members of `state` (by `host:port`) whose regions may host shards
/// of an entity type with `role`: every member when it has none.
pub(crate) fn with_role(state: &ClusterState, role: Option<&str>) -> HashSet<String> {
    state
        .members
        .iter()
        .filter(|record| role.is_none_or(|role| record.roles.contains(role)))
        .map(authority)
        .collect()
}

/// The members by `host:port`: the latest incarnation on each, with its
/// status and application version.
///
/// A node restarted on the same `host:port` is a new member (another uid)
/// while the old one is still on its way out, and the events of the two
/// interleave: the new one's `MemberUp` may come before the old one's
/// `MemberRemoved`. So the entry follows the incarnation that is not
/// leaving: an event of another uid that says it is on its way out, or
/// removed, leaves the entry of the one that is not.
#[derive(Debug, Default)]
pub(crate) struct RegionMembers {
    members: HashMap<String, Incarnation>,
}

#[derive(Debug)]
struct Incarnation {
    uid: u64,
    status: MemberStatus,
    app_version: String,
}

/// Whether a member of `status` is on its way out of the cluster.
fn going(status: MemberStatus) -> bool {
    matches!(
        status,
        MemberStatus::Leaving | MemberStatus::Exiting | MemberStatus::Down | MemberStatus::Removed
    )
}

impl RegionMembers {
    /// The members of a published state.
    pub(crate) fn from_state(state: &ClusterState) -> Self {
        let mut members = Self::default();
        for record in &state.members {
            members.note(record);
        }
        members
    }

    /// Applies one event; on a removal, the member's `host:port`.
    pub(crate) fn apply(&mut self, event: &ClusterEvent) -> Option<String> {
        if let Some(member) = event.status_member() {
            self.note(member);
            return None;
        }
        match event {
            ClusterEvent::MemberRemoved { member, .. } => {
                let at = authority(member);
                if self
                    .members
                    .get(&at)
                    .is_some_and(|i| i.uid == member.node.uid())
                {
                    self.members.remove(&at);
                }
                Some(at)
            }
            _ => None,
        }
    }

    fn note(&mut self, record: &MemberRecord) {
        let at = authority(record);
        let uid = record.node.uid();
        if let Some(held) = self.members.get(&at) {
            if held.uid != uid && going(record.status) && !going(held.status) {
                return; // the old incarnation leaving beside a new one
            }
        }
        let incarnation = Incarnation {
            uid,
            status: record.status,
            app_version: record.app_version.clone(),
        };
        self.members.insert(at, incarnation);
    }

    /// The status and application version of the member on `at`, if it
    /// is one.
    pub(crate) fn member(&self, at: &str) -> Option<(MemberStatus, &str)> {
        let held = self.members.get(at)?;
        Some((held.status, held.app_version.as_str()))
    }

    /// When the shards of a region on `at` that stopped are free.
    pub(crate) fn when_free(&self, at: &str) -> WhenFree {
        match self.member(at).map(|(status, _)| status) {
            Some(MemberStatus::Joining | MemberStatus::WeaklyUp | MemberStatus::Up) => {
                WhenFree::Now
            }
            Some(_) => WhenFree::AtRemoval,
            None => WhenFree::AfterMargin,
        }
    }

    /// The members whose regions may host shards now: Up, Leaving or
    /// Exiting (a Joining or WeaklyUp member has not started its region
    /// yet as far as allocation goes; a Down one cannot answer).
    pub(crate) fn hosting(&self) -> impl Iterator<Item = &String> {
        self.members
            .iter()
            .filter(|(_, held)| {
                matches!(
                    held.status,
                    MemberStatus::Up | MemberStatus::Leaving | MemberStatus::Exiting
                )
            })
            .map(|(at, _)| at)
    }
}

#[cfg(test)]
#[path = "region_members_tests.rs"]
mod tests;
