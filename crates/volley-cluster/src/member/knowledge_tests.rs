use std::collections::BTreeSet;
use std::time::Duration;

use foca::Invalidates;

use super::*;

fn member(port: u16, uid: u64) -> UniqueAddress {
    UniqueAddress {
        host: "10.0.0.1".into(),
        port,
        uid,
    }
}

fn record(port: u16) -> MemberRecord {
    let node = NodeId::new("10.0.0.1", port, u64::from(port), 7);
    MemberRecord::joining(node, "1".to_owned(), BTreeSet::new())
}

/// The seen-set hash as computed from scratch.
fn fresh_seen_hash(knowledge: &Knowledge) -> u64 {
    let mut copy = Knowledge {
        seen: knowledge.seen.clone(),
        ..Knowledge::default()
    };
    copy.seen_hash()
}

#[test]
fn the_kept_seen_hash_follows_every_change_of_the_seen_set() {
    let mut knowledge = Knowledge {
        prune_after: Duration::from_secs(60),
        ..Knowledge::default()
    };
    for port in 1..=3 {
        knowledge.apply_record(record(port));
    }
    let empty = knowledge.seen_hash();
    let seen = |version| Seen { version, hash: 9 };
    assert!(knowledge.apply_seen(member(1, 1), seen(1)));
    let one = knowledge.seen_hash();
    assert_ne!(one, empty);
    assert_eq!(one, fresh_seen_hash(&knowledge));
    assert!(!knowledge.apply_seen(member(1, 1), seen(1)), "stale");
    assert_eq!(knowledge.seen_hash(), one);
    assert!(knowledge.apply_seen(member(2, 2), seen(4)));
    assert_eq!(knowledge.seen_hash(), fresh_seen_hash(&knowledge));
    let removed = record(2).with_status(MemberStatus::Removed);
    assert!(knowledge.apply_record(removed));
    assert_eq!(knowledge.seen_hash(), fresh_seen_hash(&knowledge));
    assert_eq!(
        knowledge.seen_hash(),
        one,
        "the removed member's Seen is gone"
    );
    knowledge.apply_tombstone(member(1, 1), Duration::ZERO);
    assert_eq!(knowledge.seen_hash(), empty);
}

#[test]
fn an_item_invalidates_only_older_items_of_the_same_member() {
    let a = member(1, 1);
    let same_uid_elsewhere = UniqueAddress {
        host: "10.0.0.2".into(),
        ..a.clone()
    };
    let seen = |member: &UniqueAddress, version| ItemKey::Seen(member.clone(), version);
    assert!(seen(&a, 2).invalidates(&seen(&a, 1)));
    assert!(!seen(&a, 1).invalidates(&seen(&a, 2)));
    assert!(!seen(&a, 2).invalidates(&seen(&same_uid_elsewhere, 1)));
    assert!(!seen(&a, 2).invalidates(&seen(&member(2, 1), 1)));
    let up = ItemKey::Record(a.clone(), MemberStatus::Up, 1);
    let joining = ItemKey::Record(a.clone(), MemberStatus::Joining, 0);
    assert!(up.invalidates(&joining) && !joining.invalidates(&up));
    assert!(!up.invalidates(&seen(&a, 0)));
}

#[test]
fn an_exit_confirmation_is_kept_for_a_leaving_member_until_its_removal() {
    let mut knowledge = Knowledge {
        prune_after: Duration::from_secs(60),
        ..Knowledge::default()
    };
    let leaver = record(1);
    let who = leaver.unique_address();
    // Unknown, then known but not leaving: not kept (nor spread on).
    assert!(!knowledge.apply_exiting_confirmed(who.clone()));
    knowledge.apply_record(leaver.with_status(MemberStatus::Up));
    assert!(!knowledge.apply_exiting_confirmed(who.clone()));
    knowledge.apply_record(leaver.with_status(MemberStatus::Exiting));
    assert!(knowledge.apply_exiting_confirmed(who.clone()));
    assert!(!knowledge.apply_exiting_confirmed(who.clone()), "news once");
    assert!(knowledge.exiting_confirmed.contains(&who));
    knowledge.apply_record(leaver.with_status(MemberStatus::Removed));
    assert!(knowledge.exiting_confirmed.is_empty());
    let key = ItemKey::ExitingConfirmed(who.clone());
    assert!(key.invalidates(&ItemKey::ExitingConfirmed(who)));
    assert!(!key.invalidates(&ItemKey::ExitingConfirmed(member(2, 2))));
}

#[test]
fn seen_entries_of_nodes_the_table_does_not_hold_are_bounded_and_forgotten() {
    let mut knowledge = Knowledge {
        prune_after: Duration::from_secs(60),
        ..Knowledge::default()
    };
    knowledge.apply_record(record(1));
    let seen = Seen {
        version: 1,
        hash: 9,
    };
    let strangers = (2..).map(|port| member(port, u64::from(port)));
    let kept = strangers
        .take(STRANGERS_SEEN + 10)
        .filter(|stranger| knowledge.apply_seen(stranger.clone(), seen))
        .count();
    assert_eq!(kept, STRANGERS_SEEN + 1, "one member without an entry yet");
    assert_eq!(knowledge.refused_full, 9);
    assert!(
        knowledge.apply_seen(member(1, 1), seen),
        "a member's is always kept"
    );
    knowledge.forget_strangers_seen();
    assert_eq!(knowledge.seen.keys().collect::<Vec<_>>(), [&member(1, 1)]);
    assert_eq!(knowledge.seen_hash(), fresh_seen_hash(&knowledge));
}

#[test]
fn records_beyond_max_members_are_refused_and_counted() {
    let mut knowledge = Knowledge {
        table: MemberTable::with_max_members(3),
        ..Knowledge::default()
    };
    let added = (1..=5)
        .filter(|port| knowledge.apply_record(record(*port)))
        .count();
    assert_eq!(added, 3);
    assert_eq!(knowledge.refused_full, 2);
    assert_eq!(knowledge.table.len(), 3);
}

#[test]
fn a_member_moved_weakly_up_then_up_gives_one_event_each_in_status_order() {
    use crate::member::event::status_events;
    use crate::member::ClusterEvent;
    let mut knowledge = Knowledge::default();
    let joiner = record(1);
    knowledge.apply_record(joiner.clone());
    knowledge.apply_record(joiner.with_status(MemberStatus::WeaklyUp));
    // A stale Joining record changes nothing: WeaklyUp is the greater.
    assert!(!knowledge.apply_record(joiner.clone()));
    let up = MemberRecord {
        up_number: 3,
        ..joiner.with_status(MemberStatus::Up)
    };
    knowledge.apply_record(up.clone());
    let changes = std::mem::take(&mut knowledge.changes);
    let events = status_events(changes);
    assert_eq!(
        events,
        [
            ClusterEvent::MemberJoined {
                member: joiner.clone()
            },
            ClusterEvent::MemberWeaklyUp {
                member: joiner.with_status(MemberStatus::WeaklyUp)
            },
            ClusterEvent::MemberUp { member: up },
        ]
    );
    // A node that hears of the member only once it is WeaklyUp reports
    // that alone (it missed the Joining step).
    let mut late = Knowledge::default();
    late.apply_record(joiner.with_status(MemberStatus::WeaklyUp));
    let events = status_events(std::mem::take(&mut late.changes));
    assert!(matches!(
        events.as_slice(),
        [ClusterEvent::MemberWeaklyUp { .. }]
    ));
}
