//! What a node's manager must do about the singleton, decided from its
//! view of the members alone (no I/O), so every rule is unit-tested.

use crate::member::{MemberStatus, UniqueAddress};

use super::oldest::Membership;

/// The manager's duty after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Duty {
    /// Another member hosts it (or nobody yet): nothing to run.
    Younger,
    /// This node is the oldest and nothing older may still run it.
    Start,
    /// This node runs it and still should.
    Keep,
    /// This node runs it but no longer should (it leaves, is downed, or
    /// an older member is Up): hand it over.
    HandOver,
    /// This node is the oldest, but these older members left and may
    /// still run it: ask each to hand over first.
    AwaitHandOver(Vec<UniqueAddress>),
    /// This node is the oldest, but an older member is Down and not yet
    /// removed: wait for its removal (it runs until the resolver downs it,
    /// and a downed node stops its actors).
    AwaitRemoval,
    /// This node is the oldest Up it knows, but a Joining member with a
    /// lower address may have been moved Up in the same leader round with
    /// a lower up-number (the leader numbers a round in address order,
    /// and each record travels on its own): wait until it is seen Up.
    AwaitUp,
    /// This node is the oldest, but these older members were downed and
    /// removed less than `down_removal_margin` ago.
    AwaitMargin(Vec<UniqueAddress>),
}

/// The duty of the manager on `me`, which runs an instance or not.
pub(crate) fn duty(
    members: &Membership,
    me: &UniqueAddress,
    role: Option<&str>,
    running: bool,
) -> Duty {
    let oldest = members.oldest_up(role).map(|r| r.unique_address());
    let Some(mine) = members.record(me) else {
        return if running {
            Duty::HandOver
        } else {
            Duty::Younger
        };
    };
    if oldest.as_ref() != Some(me) {
        return if running {
            Duty::HandOver
        } else {
            Duty::Younger
        };
    }
    if running {
        return Duty::Keep;
    }
    let me_first = mine.unique_address();
    if members.joining(role).any(|r| r.unique_address() < me_first) {
        return Duty::AwaitUp;
    }
    if members
        .older_in(mine, role, &[MemberStatus::Down])
        .next()
        .is_some()
    {
        return Duty::AwaitRemoval;
    }
    let downed: Vec<UniqueAddress> = members
        .older_downed(mine, role)
        .map(|r| r.unique_address())
        .collect();
    if !downed.is_empty() {
        return Duty::AwaitMargin(downed);
    }
    let leaving = [MemberStatus::Leaving, MemberStatus::Exiting];
    let mut previous: Vec<UniqueAddress> = members
        .older_in(mine, role, &leaving)
        .chain(members.older_left(mine, role))
        .map(|r| r.unique_address())
        .collect();
    previous.sort();
    previous.dedup();
    if previous.is_empty() {
        Duty::Start
    } else {
        Duty::AwaitHandOver(previous)
    }
}

#[cfg(test)]
#[path = "duty_tests.rs"]
mod tests;
