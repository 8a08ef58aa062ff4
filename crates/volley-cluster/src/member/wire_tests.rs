use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

fn record() -> MemberRecord {
    MemberRecord {
        node: NodeId::with_epoch("10.0.0.1", 2552, 42, 7, 1),
        status: MemberStatus::Up,
        up_number: 3,
        app_version: "1.2.3".to_owned(),
        roles: BTreeSet::from(["backend".to_owned(), "dc-x".to_owned()]),
    }
}

fn member() -> UniqueAddress {
    UniqueAddress::of(&record().node)
}

fn services() -> OwnerSet {
    let entry = crate::receptionist::ServiceEntry {
        key: Arc::from("workers"),
        wire_type_id: 70,
        path: Arc::from("volley://sys@10.0.0.1:2552/user/w"),
        uid: 5,
    };
    OwnerSet {
        version: 2,
        entries: BTreeSet::from([entry]),
    }
}

#[test]
fn items_round_trip() {
    let items = [
        Item::Record(record()),
        Item::Seen {
            member: member(),
            seen: Seen {
                version: 9,
                hash: 0xfeed,
            },
        },
        Item::Services {
            owner: member(),
            set: services(),
        },
        Item::ExitingConfirmed(member()),
    ];
    for item in items {
        assert_eq!(decode_item(&encode_item(&item)), Ok(item));
    }
}

#[test]
fn every_status_round_trips_with_its_fixed_code() {
    let codes = [
        (MemberStatus::Joining, 0),
        (MemberStatus::WeaklyUp, 1),
        (MemberStatus::Up, 2),
        (MemberStatus::Leaving, 3),
        (MemberStatus::Exiting, 4),
        (MemberStatus::Down, 5),
        (MemberStatus::Removed, 6),
    ];
    let status_at = 2 + 8 + 2 + 8 + 8 + 2;
    for (status, code) in codes {
        let weakly = MemberRecord {
            status,
            up_number: 0,
            ..record()
        };
        let mut bytes = Vec::new();
        put_record(&mut bytes, &weakly);
        assert_eq!(bytes[status_at], code, "{status:?}");
        let item = Item::Record(weakly);
        assert_eq!(decode_item(&encode_item(&item)), Ok(item));
    }
    let page = DataPage {
        from: Some(record().node),
        last: true,
        records: vec![MemberRecord {
            status: MemberStatus::WeaklyUp,
            up_number: 0,
            ..record()
        }],
        ..DataPage::default()
    };
    assert_eq!(decode_page(&encode_page(&page, &record().node)), Ok(page));
}

#[test]
fn digests_and_pages_round_trip() {
    let digest = Digest {
        from: record().node,
        seen: Seen {
            version: 1,
            hash: 2,
        },
        seen_hash: 3,
        services_hash: 8,
    };
    assert_eq!(decode_digest(&encode_digest(&digest)), Ok(digest));
    let page = DataPage {
        from: Some(record().node),
        answer_wanted: true,
        last: true,
        table_hash: 4,
        seen_hash: 5,
        records: vec![record()],
        tombstones: vec![(member(), Duration::from_millis(1500))],
        seen: vec![(
            member(),
            Seen {
                version: 6,
                hash: 7,
            },
        )],
        services_hash: 9,
        services: vec![(member(), services())],
    };
    assert_eq!(decode_page(&encode_page(&page, &record().node)), Ok(page));
}

#[test]
fn a_record_has_a_fixed_little_endian_layout() {
    let mut bytes = Vec::new();
    put_record(&mut bytes, &record());
    let mut expected = Vec::new();
    expected.extend_from_slice(&8u16.to_le_bytes());
    expected.extend_from_slice(b"10.0.0.1");
    expected.extend_from_slice(&2552u16.to_le_bytes());
    expected.extend_from_slice(&42u64.to_le_bytes());
    expected.extend_from_slice(&7u64.to_le_bytes());
    expected.extend_from_slice(&1u16.to_le_bytes());
    expected.push(2); // Up
    expected.extend_from_slice(&3u32.to_le_bytes());
    expected.extend_from_slice(&5u16.to_le_bytes());
    expected.extend_from_slice(b"1.2.3");
    expected.extend_from_slice(&2u16.to_le_bytes());
    expected.extend_from_slice(&7u16.to_le_bytes());
    expected.extend_from_slice(b"backend");
    expected.extend_from_slice(&4u16.to_le_bytes());
    expected.extend_from_slice(b"dc-x");
    assert_eq!(bytes, expected);
}

#[test]
fn bad_items_are_typed_errors() {
    assert_eq!(decode_item(&[0x7f]), Err(CodecError::UnknownItem(0x7f)));
    let mut bytes = encode_item(&Item::Record(record()));
    let status_at = 1 + 2 + 8 + 2 + 8 + 8 + 2;
    bytes[status_at] = 7; // past Removed
    assert_eq!(decode_item(&bytes), Err(CodecError::UnknownStatus(7)));
    let mut trailing = encode_item(&Item::Record(record()));
    trailing.push(0);
    assert_eq!(decode_item(&trailing), Err(CodecError::TrailingBytes(1)));
    let whole = encode_item(&Item::Record(record()));
    assert!(matches!(
        decode_item(&whole[..whole.len() - 1]),
        Err(CodecError::Truncated { .. })
    ));
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_the_decoders(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_item(&bytes);
        let _ = decode_digest(&bytes);
        let _ = decode_page(&bytes);
    }
}
