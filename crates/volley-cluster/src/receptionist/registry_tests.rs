use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::receptionist::{ServiceBounds, ServiceRefused};

fn owner(port: u16) -> UniqueAddress {
    UniqueAddress {
        host: Arc::from("10.0.0.1"),
        port,
        uid: u64::from(port) * 11,
    }
}

fn entry(n: u64) -> ServiceEntry {
    ServiceEntry {
        key: Arc::from("workers"),
        wire_type_id: 7,
        path: Arc::from(format!("volley://sys@10.0.0.1:1/user/w{n}").as_str()),
        uid: n,
    }
}

fn set(version: u64, entries: &[u64]) -> OwnerSet {
    OwnerSet {
        version,
        entries: entries.iter().map(|n| entry(*n)).collect(),
    }
}

#[test]
fn a_newer_set_replaces_an_older_one_and_reports_the_difference() {
    let mut registry = ServiceRegistry::new(owner(1));
    assert!(registry.merge(&owner(2), set(1, &[1, 2])));
    let _ = registry.take_changes();
    assert!(registry.merge(&owner(2), set(2, &[2, 3])));
    let changes = registry.take_changes();
    let summary: Vec<(u64, bool)> = changes
        .iter()
        .map(|change| (change.entry.uid, change.registered))
        .collect();
    assert_eq!(summary, vec![(1, false), (3, true)]);
}

#[test]
fn an_older_or_equal_set_changes_nothing() {
    let mut registry = ServiceRegistry::new(owner(1));
    registry.merge(&owner(2), set(3, &[1]));
    let _ = registry.take_changes();
    let hash = registry.hash();
    assert!(!registry.merge(&owner(2), set(2, &[9])));
    assert!(!registry.merge(&owner(2), set(3, &[1])));
    assert!(registry.take_changes().is_empty());
    assert_eq!(registry.hash(), hash);
}

#[test]
fn a_removed_owner_takes_its_services_with_it() {
    let mut registry = ServiceRegistry::new(owner(1));
    registry.merge(&owner(2), set(1, &[1, 2]));
    let _ = registry.take_changes();
    assert!(registry.remove_owner(&owner(2)));
    let gone: Vec<bool> = registry
        .take_changes()
        .iter()
        .map(|change| change.registered)
        .collect();
    assert_eq!(gone, vec![false, false]);
    assert!(registry.get(&owner(2)).is_none());
    assert!(!registry.remove_owner(&owner(2)));
}

#[test]
fn this_nodes_own_services_are_not_reported() {
    let mut registry = ServiceRegistry::new(owner(1));
    registry.merge(&owner(1), set(1, &[1]));
    assert!(registry.take_changes().is_empty());
    assert_eq!(registry.own_set(), set(1, &[1]));
}

#[test]
fn updating_a_set_bumps_its_version_only_on_a_change() {
    let start = set(4, &[1]);
    assert_eq!(start.updated(entry(1), true), None);
    assert_eq!(start.updated(entry(2), false), None);
    assert_eq!(start.updated(entry(2), true), Some(set(5, &[1, 2])));
    assert_eq!(start.updated(entry(1), false), Some(set(5, &[])));
}

#[test]
fn bounds_refuse_too_many_entries_and_long_strings() {
    let bounds = ServiceBounds {
        max_entries_per_member: 2,
        max_path_len: 40,
        max_key_len: 8,
    };
    assert!(bounds.check_set(&set(1, &[1, 2])).is_ok());
    assert_eq!(
        bounds.check_set(&set(1, &[1, 2, 3])),
        Err(ServiceRefused::TooManyEntries {
            max: 2,
            owner_has: 3
        })
    );
    let mut long = entry(1);
    long.path = Arc::from("x".repeat(41).as_str());
    assert!(matches!(
        bounds.check_entry(&long),
        Err(ServiceRefused::PathTooLong { len: 41, max: 40 })
    ));
    let mut long_key = entry(1);
    long_key.key = Arc::from("abcdefghi");
    assert!(matches!(
        bounds.check_entry(&long_key),
        Err(ServiceRefused::KeyTooLong { len: 9, max: 8 })
    ));
}

/// One owner's sets at versions 1 to 4, in any delivery order and with
/// repeats: every order ends with the same registry.
fn deliveries() -> impl Strategy<Value = Vec<(u16, u64)>> {
    prop::collection::vec((2u16..5, 1u64..5), 0..24)
}

fn set_of(port: u16, version: u64) -> OwnerSet {
    let entries: Vec<u64> = (0..version).map(|n| n * 10 + u64::from(port)).collect();
    set(version, &entries)
}

proptest! {
    #[test]
    fn merge_is_order_free_and_idempotent(deliveries in deliveries(), seed in any::<u64>()) {
        let mut forward = ServiceRegistry::new(owner(1));
        for (port, version) in &deliveries {
            forward.merge(&owner(*port), set_of(*port, *version));
        }
        let mut shuffled = deliveries.clone();
        let len = shuffled.len();
        for i in (1..len).rev() {
            let j = (seed.wrapping_mul(i as u64 + 7) % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        let mut backward = ServiceRegistry::new(owner(1));
        for (port, version) in shuffled.iter().chain(shuffled.iter()) {
            backward.merge(&owner(*port), set_of(*port, *version));
        }
        let a: Vec<_> = forward.sets().map(|(o, s)| (o.clone(), s.clone())).collect();
        let b: Vec<_> = backward.sets().map(|(o, s)| (o.clone(), s.clone())).collect();
        prop_assert_eq!(a, b);
        prop_assert_eq!(forward.hash(), backward.hash());
    }

    #[test]
    fn reported_changes_replay_to_the_listing(deliveries in deliveries()) {
        let mut registry = ServiceRegistry::new(owner(1));
        let mut listing = std::collections::BTreeSet::new();
        for (port, version) in &deliveries {
            registry.merge(&owner(*port), set_of(*port, *version));
            for change in registry.take_changes() {
                let key = (change.owner.clone(), change.entry.clone());
                if change.registered {
                    prop_assert!(listing.insert(key));
                } else {
                    prop_assert!(listing.remove(&key));
                }
            }
        }
        let held: std::collections::BTreeSet<_> =
            registry.entries().map(|(o, e)| (o.clone(), e.clone())).collect();
        prop_assert_eq!(listing, held);
    }
}
