use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::node_id::NodeId;

fn record(port: u16, status: MemberStatus) -> MemberRecord {
    MemberRecord {
        node: NodeId::new(Arc::<str>::from("h"), port, u64::from(port), 7),
        status,
        up_number: 0,
        app_version: "0.0.0".to_owned(),
        roles: Default::default(),
    }
}

fn table(records: &[MemberRecord]) -> MemberTable {
    let mut table = MemberTable::default();
    for record in records {
        table.merge(record.clone(), Duration::ZERO);
    }
    table
}

/// An Exiting member may take `TIMEOUT` to confirm.
const TIMEOUT: Duration = Duration::from_secs(30);

fn progress<'a>(
    confirmed: &'a BTreeSet<UniqueAddress>,
    unreachable: &'a BTreeSet<UniqueAddress>,
    since: &'a BTreeMap<UniqueAddress, Duration>,
    now: Duration,
) -> ExitingProgress<'a> {
    ExitingProgress {
        confirmed,
        unreachable,
        since,
        now,
        timeout: TIMEOUT,
    }
}

/// Each moved record's port, new status and up-number.
fn summary(moves: &[MemberRecord]) -> Vec<(u16, MemberStatus, u32)> {
    moves
        .iter()
        .map(|record| (record.node.port(), record.status, record.up_number))
        .collect()
}

fn member(port: u16) -> UniqueAddress {
    record(port, MemberStatus::Up).unique_address()
}

#[test]
fn the_leader_is_the_first_reachable_up_member_by_address() {
    let table = table(&[
        record(1, MemberStatus::Joining),
        record(2, MemberStatus::Up),
        record(3, MemberStatus::Up),
    ]);
    let none = BTreeSet::new();
    assert_eq!(leader_of(&table, &none, &member(1)), Some(member(2)));
    let second_unreachable = BTreeSet::from([member(2)]);
    assert_eq!(
        leader_of(&table, &second_unreachable, &member(1)),
        Some(member(3))
    );
    // A node never counts itself unreachable.
    assert_eq!(
        leader_of(&table, &second_unreachable, &member(2)),
        Some(member(2))
    );
}

#[test]
fn without_up_members_the_leader_is_the_first_reachable_one_down_and_exiting_last() {
    let table = table(&[
        record(1, MemberStatus::Down),
        record(2, MemberStatus::Joining),
    ]);
    assert_eq!(
        leader_of(&table, &BTreeSet::new(), &member(2)),
        Some(member(2))
    );
}

#[test]
fn convergence_needs_every_reachable_up_member_to_have_seen_the_table() {
    let mut table = table(&[
        record(1, MemberStatus::Up),
        record(2, MemberStatus::Up),
        record(3, MemberStatus::Joining),
    ]);
    let hash = table.hash();
    let mut seen = BTreeMap::new();
    let none = BTreeSet::new();
    assert!(!converged(&table, &seen, &none, &member(1), hash));
    seen.insert(member(2), Seen { version: 1, hash });
    assert!(converged(&table, &seen, &none, &member(1), hash));
    // An unreachable member blocks it unless Down or Exiting.
    let third_unreachable = BTreeSet::from([member(3)]);
    assert!(!converged(
        &table,
        &seen,
        &third_unreachable,
        &member(1),
        hash
    ));
    table.merge(record(3, MemberStatus::Down), Duration::ZERO);
    let hash = table.hash();
    seen.insert(member(2), Seen { version: 2, hash });
    assert!(converged(
        &table,
        &seen,
        &third_unreachable,
        &member(1),
        hash
    ));
}

#[test]
fn before_anyone_is_up_every_joining_member_must_have_seen_the_table() {
    let mut table = table(&[
        record(1, MemberStatus::Joining),
        record(2, MemberStatus::Joining),
    ]);
    let hash = table.hash();
    let none = BTreeSet::new();
    // The other joiner holds a table this one lacks (the first seed's
    // record): no convergence, so no leader moves anyone Up.
    let mut seen = BTreeMap::from([(
        member(2),
        Seen {
            version: 1,
            hash: hash ^ 1,
        },
    )]);
    assert!(!converged(&table, &seen, &none, &member(1), hash));
    seen.insert(member(2), Seen { version: 2, hash });
    assert!(converged(&table, &seen, &none, &member(1), hash));
    // Once a member is Up, Joining members no longer count (Akka's rule).
    let mut formed = self::table(&[
        record(1, MemberStatus::Up),
        record(2, MemberStatus::Joining),
    ]);
    let formed_hash = formed.hash();
    assert!(converged(
        &formed,
        &BTreeMap::new(),
        &none,
        &member(1),
        formed_hash
    ));
}

#[test]
fn leader_actions_move_each_member_one_step() {
    let table = table(&[
        MemberRecord {
            up_number: 1,
            ..record(1, MemberStatus::Up)
        },
        record(2, MemberStatus::Joining),
        record(3, MemberStatus::Leaving),
        record(4, MemberStatus::Exiting),
        record(5, MemberStatus::Down),
        record(6, MemberStatus::Joining),
    ]);
    let confirmed = BTreeSet::from([member(4)]);
    let (none, since) = (BTreeSet::new(), BTreeMap::new());
    let exiting = progress(&confirmed, &none, &since, Duration::ZERO);
    assert_eq!(
        summary(&leader_actions(&table, true, &exiting)),
        [
            (2, MemberStatus::Up, 2),
            (3, MemberStatus::Exiting, 0),
            (4, MemberStatus::Removed, 0),
            (5, MemberStatus::Removed, 0),
            (6, MemberStatus::Up, 3),
        ]
    );
    let held: Vec<MemberStatus> = leader_actions(
        &table,
        min_nr_fulfilled(&table, 7, &BTreeMap::new()),
        &exiting,
    )
    .iter()
    .map(|r| r.status)
    .collect();
    assert!(
        !held.contains(&MemberStatus::Up),
        "min-nr-of-members holds Joining"
    );
}

#[test]
fn an_exiting_member_is_removed_only_once_it_confirmed_or_is_unreachable_or_late() {
    let table = table(&[
        MemberRecord {
            up_number: 1,
            ..record(1, MemberStatus::Up)
        },
        record(2, MemberStatus::Exiting),
        record(3, MemberStatus::Exiting),
        record(4, MemberStatus::Exiting),
        record(5, MemberStatus::Exiting),
    ]);
    let confirmed = BTreeSet::from([member(2)]);
    let unreachable = BTreeSet::from([member(3)]);
    let since = BTreeMap::from([
        (member(4), Duration::from_secs(10)),
        (member(5), Duration::ZERO),
    ]);
    let removed = |now| -> Vec<u16> {
        leader_actions(
            &table,
            true,
            &progress(&confirmed, &unreachable, &since, now),
        )
        .iter()
        .filter(|record| record.status == MemberStatus::Removed)
        .map(|record| record.node.port())
        .collect()
    };
    // 5 has been Exiting for 30 s exactly: its time is up; 4 for 20 s.
    assert_eq!(removed(TIMEOUT), [2, 3, 5]);
    assert_eq!(removed(TIMEOUT + Duration::from_secs(10)), [2, 3, 4, 5]);
    let exiting = progress(&confirmed, &unreachable, &since, TIMEOUT);
    assert_eq!(exiting.removal(&member(2)), Some(ExitingRemoval::Confirmed));
    assert_eq!(
        exiting.removal(&member(3)),
        Some(ExitingRemoval::Unreachable)
    );
    assert_eq!(exiting.removal(&member(4)), None);
    assert_eq!(exiting.removal(&member(5)), Some(ExitingRemoval::TimedOut));
    // A member this leader never saw Exiting has no clock running yet.
    assert_eq!(exiting.removal(&member(6)), None);
}

fn with_roles(port: u16, status: MemberStatus, roles: &[&str]) -> MemberRecord {
    MemberRecord {
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        ..record(port, status)
    }
}

#[test]
fn each_role_has_the_leader_of_its_own_members() {
    let table = table(&[
        with_roles(1, MemberStatus::Up, &["front"]),
        with_roles(2, MemberStatus::Joining, &["back"]),
        with_roles(3, MemberStatus::Up, &["back", "front"]),
        with_roles(4, MemberStatus::Up, &["back"]),
    ]);
    let none = BTreeSet::new();
    let leaders = role_leaders(&table, &none, &member(1));
    let expected = BTreeMap::from([
        ("back".to_owned(), Some(member(3))),
        ("front".to_owned(), Some(member(1))),
    ]);
    assert_eq!(leaders, expected, "Up before Joining, then by address");
    let third_unreachable = BTreeSet::from([member(3)]);
    let leaders = role_leaders(&table, &third_unreachable, &member(1));
    assert_eq!(leaders["back"], Some(member(4)));
}

#[test]
fn joining_members_wait_for_each_role_minimum() {
    let table = table(&[
        with_roles(1, MemberStatus::Up, &["back"]),
        with_roles(2, MemberStatus::Joining, &["front"]),
    ]);
    let per_role = BTreeMap::from([("back".to_owned(), 2)]);
    assert!(!min_nr_fulfilled(&table, 1, &per_role), "one back member");
    assert!(min_nr_fulfilled(&table, 2, &BTreeMap::new()));
    let mut more = table.clone();
    more.merge(
        with_roles(3, MemberStatus::Joining, &["back"]),
        Duration::ZERO,
    );
    assert!(min_nr_fulfilled(&more, 2, &per_role));
    assert!(!min_nr_fulfilled(&more, 4, &per_role), "and the total too");
}

/// The leader's view while it has seen no convergence since `since`,
/// with Akka's default `allow-weakly-up-members`.
fn without<'a>(
    unreachable: &'a BTreeSet<UniqueAddress>,
    me: &'a UniqueAddress,
    since: Duration,
    now: Duration,
) -> WithoutConvergence<'a> {
    WithoutConvergence {
        unreachable,
        me,
        since,
        now,
        weakly_up_after: Some(WEAKLY_UP_AFTER),
        may_move_up: true,
    }
}

const WEAKLY_UP_AFTER: Duration = Duration::from_secs(7);

fn moved(table: &MemberTable, without: &WithoutConvergence<'_>) -> Vec<(u16, MemberStatus, u32)> {
    summary(&weakly_up_moves(table, without))
}

#[test]
fn reachable_joining_members_go_weakly_up_once_convergence_is_missing_long_enough() {
    let table = table(&[
        MemberRecord {
            up_number: 1,
            ..record(1, MemberStatus::Up)
        },
        record(2, MemberStatus::Joining),
        MemberRecord {
            up_number: 2,
            ..record(3, MemberStatus::Up)
        },
        record(4, MemberStatus::Joining),
        record(5, MemberStatus::Leaving),
    ]);
    // 3 is cut off, and so is the joiner 4: only 2 is reachable.
    let unreachable = BTreeSet::from([member(3), member(4)]);
    let leader = member(1);
    let since = Duration::from_secs(100);
    let just_before = since + WEAKLY_UP_AFTER - Duration::from_millis(1);
    assert_eq!(
        moved(&table, &without(&unreachable, &leader, since, just_before)),
        []
    );
    let due = since + WEAKLY_UP_AFTER;
    assert_eq!(
        moved(&table, &without(&unreachable, &leader, since, due)),
        [(2, MemberStatus::WeaklyUp, 0)],
        "no up-number before Up"
    );
    let off = WithoutConvergence {
        weakly_up_after: None,
        ..without(
            &unreachable,
            &leader,
            since,
            due + Duration::from_secs(3600),
        )
    };
    assert_eq!(moved(&table, &off), [], "off: Joining until convergence");
    let too_few = WithoutConvergence {
        may_move_up: false,
        ..without(&unreachable, &leader, since, due)
    };
    assert_eq!(moved(&table, &too_few), [], "min-nr-of-members holds them");
}

#[test]
fn a_leader_that_is_not_up_itself_moves_no_one_weakly_up() {
    // 2 leads a side with no Up member (1, the only one, is cut off).
    let table = table(&[
        MemberRecord {
            up_number: 1,
            ..record(1, MemberStatus::Up)
        },
        record(2, MemberStatus::Joining),
        record(3, MemberStatus::Joining),
    ]);
    let unreachable = BTreeSet::from([member(1)]);
    assert_eq!(leader_of(&table, &unreachable, &member(2)), Some(member(2)));
    let late = Duration::from_secs(3600);
    let leader = member(2);
    let leaderless = without(&unreachable, &leader, Duration::ZERO, late);
    assert_eq!(moved(&table, &leaderless), []);
    // A Leaving leader still moves them, as an Up one does.
    let mut leaving = table.clone();
    leaving.merge(record(2, MemberStatus::Leaving), Duration::ZERO);
    assert_eq!(
        moved(&leaving, &leaderless),
        [(3, MemberStatus::WeaklyUp, 0)]
    );
}

#[test]
fn weakly_up_members_go_up_at_convergence_and_never_lead_or_block_it() {
    let mut table = table(&[
        record(1, MemberStatus::WeaklyUp),
        MemberRecord {
            up_number: 4,
            ..record(2, MemberStatus::Up)
        },
        record(3, MemberStatus::Joining),
        record(4, MemberStatus::WeaklyUp),
    ]);
    let none = BTreeSet::new();
    // Up members lead before WeaklyUp ones, whatever the address order.
    assert_eq!(leader_of(&table, &none, &member(1)), Some(member(2)));
    // A WeaklyUp member that has not seen the table does not hold back
    // convergence once someone is Up (it is not counted, as Joining).
    let hash = table.hash();
    assert!(converged(&table, &BTreeMap::new(), &none, &member(2), hash));
    let (nothing, since) = (BTreeSet::new(), BTreeMap::new());
    let exiting = progress(&nothing, &none, &since, Duration::ZERO);
    assert_eq!(
        summary(&leader_actions(&table, true, &exiting)),
        [
            (1, MemberStatus::Up, 5),
            (3, MemberStatus::Up, 6),
            (4, MemberStatus::Up, 7),
        ],
        "WeaklyUp and Joining alike, numbered in address order"
    );
    // While a cluster forms (no one Up), a WeaklyUp member must have seen
    // the table, as a Joining one must.
    let mut forming = self::table(&[
        record(1, MemberStatus::WeaklyUp),
        record(3, MemberStatus::Joining),
    ]);
    let hash = forming.hash();
    let seen_by_1 = BTreeMap::from([(member(1), Seen { version: 1, hash })]);
    assert!(!converged(
        &forming,
        &BTreeMap::new(),
        &none,
        &member(3),
        hash
    ));
    assert!(converged(&forming, &seen_by_1, &none, &member(3), hash));
}
