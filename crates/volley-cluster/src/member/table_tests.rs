use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::node_id::NodeId;

const NOW: Duration = Duration::from_secs(10);
const DAY: Duration = Duration::from_secs(24 * 3600);

fn status() -> impl Strategy<Value = MemberStatus> {
    prop_oneof![
        Just(MemberStatus::Joining),
        Just(MemberStatus::WeaklyUp),
        Just(MemberStatus::Up),
        Just(MemberStatus::Leaving),
        Just(MemberStatus::Exiting),
        Just(MemberStatus::Down),
        Just(MemberStatus::Removed),
    ]
}

/// Records of a few members (few ports and uids, so that they collide),
/// with any status, epoch, up-number, version and roles.
fn record() -> impl Strategy<Value = MemberRecord> {
    (
        1u16..4,
        1u64..3,
        0u16..3,
        status(),
        0u32..4,
        prop::sample::select(vec!["1.0.0", "1.2.0"]),
        prop::collection::btree_set(prop::sample::select(vec!["a", "b"]), 0..2),
    )
        .prop_map(
            |(port, uid, epoch, status, up_number, version, roles)| MemberRecord {
                node: NodeId::with_epoch(Arc::from("h"), port, uid, 7, epoch),
                status,
                up_number,
                app_version: version.to_owned(),
                roles: roles
                    .into_iter()
                    .map(str::to_owned)
                    .collect::<BTreeSet<_>>(),
            },
        )
}

fn table(records: &[MemberRecord]) -> MemberTable {
    let mut table = MemberTable::default();
    for record in records {
        table.merge(record.clone(), NOW);
    }
    table
}

/// Merges `from` into `into`, as anti-entropy does.
fn merge_into(into: &mut MemberTable, from: &MemberTable) {
    for record in from.records() {
        into.merge(record.clone(), NOW);
    }
    for (member, _) in from.tombstones() {
        into.merge_tombstone(member.clone(), Duration::ZERO, NOW, Duration::MAX);
    }
}

fn merged(a: &MemberTable, b: &MemberTable) -> MemberTable {
    let mut result = a.clone();
    merge_into(&mut result, b);
    result
}

/// What two tables must agree on: the records and the removed members.
fn content(table: &MemberTable) -> (Vec<MemberRecord>, Vec<UniqueAddress>) {
    (
        table.records().cloned().collect(),
        table
            .tombstones()
            .map(|(member, _)| member.clone())
            .collect(),
    )
}

fn tables() -> impl Strategy<Value = MemberTable> {
    prop::collection::vec(record(), 0..8).prop_map(|records| table(&records))
}

proptest! {
    #[test]
    fn merge_is_commutative(a in tables(), b in tables()) {
        prop_assert_eq!(content(&merged(&a, &b)), content(&merged(&b, &a)));
    }

    #[test]
    fn merge_is_associative(a in tables(), b in tables(), c in tables()) {
        let left = merged(&merged(&a, &b), &c);
        let right = merged(&a, &merged(&b, &c));
        prop_assert_eq!(content(&left), content(&right));
    }

    #[test]
    fn merge_is_idempotent(a in tables()) {
        prop_assert_eq!(content(&merged(&a, &a)), content(&a));
    }

    #[test]
    fn records_merged_in_any_order_give_one_table(records in prop::collection::vec(record(), 0..10)) {
        let mut reversed = records.clone();
        reversed.reverse();
        let (mut forward, mut backward) = (table(&records), table(&reversed));
        prop_assert_eq!(content(&forward), content(&backward));
        prop_assert_eq!(forward.hash(), backward.hash());
    }
}

#[test]
fn a_removed_member_stays_removed_until_its_tombstone_is_pruned() {
    let node = NodeId::new("h", 1, 1, 7);
    let joining = MemberRecord::joining(node, "1.0.0".to_owned(), BTreeSet::new());
    let mut table = MemberTable::default();
    assert_eq!(
        table.merge(joining.clone(), NOW),
        Merged::New { previous: None }
    );
    let removed = joining.with_status(MemberStatus::Removed);
    assert_eq!(
        table.merge(removed, NOW),
        Merged::New {
            previous: Some(joining.clone())
        }
    );
    assert_eq!(table.merge(joining.clone(), NOW), Merged::Stale);
    assert!(table.is_empty());
    let day = Duration::from_secs(24 * 3600);
    assert_eq!(table.prune(NOW + day / 2, day), 0);
    assert_eq!(table.prune(NOW + day, day), 1);
    assert!(!table.is_removed(&joining.unique_address()));
}

#[test]
fn a_tombstone_older_than_the_pruning_age_is_not_taken_back() {
    let member = UniqueAddress::of(&NodeId::new("h", 1, 1, 7));
    let day = Duration::from_secs(24 * 3600);
    let mut table = MemberTable::default();
    assert_eq!(
        table.merge_tombstone(member.clone(), day, NOW, day),
        Merged::Stale
    );
    assert_eq!(
        table.merge_tombstone(member.clone(), day / 2, NOW, day),
        Merged::New { previous: None }
    );
    assert!(table.is_removed(&member));
}

#[test]
fn the_hash_follows_the_records() {
    let mut table = MemberTable::default();
    let empty = table.hash();
    let record = MemberRecord::joining(NodeId::new("h", 1, 1, 7), "1".to_owned(), BTreeSet::new());
    table.merge(record.clone(), NOW);
    let joining = table.hash();
    assert_ne!(empty, joining);
    table.merge(record.with_status(MemberStatus::Up), NOW);
    assert_ne!(joining, table.hash());
}

#[test]
fn a_full_table_refuses_new_members_but_still_takes_news_of_its_own() {
    let record = |port| {
        MemberRecord::joining(
            NodeId::new("h", port, 1, 7),
            "1".to_owned(),
            BTreeSet::new(),
        )
    };
    let mut table = MemberTable::with_max_members(2);
    table.merge(record(1), NOW);
    table.merge(record(2), NOW);
    assert_eq!(table.merge(record(3), NOW), Merged::Full);
    assert_eq!(
        table.merge_tombstone(record(4).unique_address(), Duration::ZERO, NOW, DAY),
        Merged::New { previous: None },
        "tombstones have their own room"
    );
    let up = record(1).with_status(MemberStatus::Up);
    assert!(matches!(table.merge(up, NOW), Merged::New { .. }));
    assert_eq!(table.len(), 2);
    assert!(table.get(&record(3).unique_address()).is_none());
}

#[test]
fn full_tombstones_refuse_strangers_and_forget_the_oldest_for_a_member_removed() {
    let member = |port| UniqueAddress::of(&NodeId::new("h", port, 1, 7));
    let mut table = MemberTable::with_max_members(2);
    let second = Duration::from_secs(1);
    table.merge_tombstone(member(1), 3 * second, NOW, DAY);
    table.merge_tombstone(member(2), second, NOW, DAY);
    assert_eq!(
        table.merge_tombstone(member(3), Duration::ZERO, NOW, DAY),
        Merged::Full
    );
    let record = MemberRecord::joining(NodeId::new("h", 4, 1, 7), "1".to_owned(), BTreeSet::new());
    table.merge(record.clone(), NOW);
    let removed = record.clone().with_status(MemberStatus::Removed);
    assert!(matches!(
        table.merge(removed, NOW),
        Merged::New { previous: Some(_) }
    ));
    assert!(table.is_removed(&member(4)));
    assert!(
        !table.is_removed(&member(1)),
        "the oldest tombstone made room"
    );
    assert!(table.is_removed(&member(2)));
    assert_eq!(table.tombstones().count(), 2);
}
