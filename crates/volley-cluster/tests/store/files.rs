//! Files the store must refuse, with a typed error and without a panic.

use std::fs;

use volley_cluster::sharding::store::{RedbStore, RememberStore, StoreError, StoreUpdate};
use volley_cluster::sharding::ShardId;

fn store_with_entities(path: &std::path::Path) {
    let store = RedbStore::open(path).unwrap();
    let ids: Vec<String> = (0..200).map(|i| format!("entity-{i}")).collect();
    store
        .update("cart", ShardId(1), &StoreUpdate::started(ids))
        .unwrap();
    store.add_shard("cart", ShardId(1)).unwrap();
}

#[test]
fn a_second_instance_on_an_open_file_is_refused_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remember.redb");
    let first = RedbStore::open(&path).unwrap();
    match RedbStore::open(&path) {
        Err(StoreError::Locked { path: locked }) => assert_eq!(locked, path),
        other => panic!("expected Locked, got {other:?}"),
    }
    // The refused open did not disturb the first instance.
    first
        .update("cart", ShardId(0), &StoreUpdate::started(["a"]))
        .unwrap();
    assert_eq!(first.entities("cart", ShardId(0)).unwrap().len(), 1);
    drop(first);
    assert!(RedbStore::open(&path).is_ok(), "closing releases the file");
}

#[test]
fn a_file_that_is_not_a_store_is_refused_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    fs::write(&path, "these are not the pages of a database\n".repeat(200)).unwrap();
    match RedbStore::open(&path) {
        Err(StoreError::Corrupt { .. }) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("these are not"),
        "the refused file is left as it was"
    );
}

#[test]
fn damaged_pages_are_refused_as_corrupt_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.redb");
    store_with_entities(&clean);
    let bytes = fs::read(&clean).unwrap();
    // Damage every part of the file in turn, header included.
    let step = (bytes.len() / 64).max(1);
    let mut refused = 0;
    for at in (0..bytes.len()).step_by(step) {
        let damaged = dir.path().join(format!("damaged-{at}.redb"));
        let mut copy = bytes.clone();
        copy[at] ^= 0xff;
        fs::write(&damaged, &copy).unwrap();
        match RedbStore::open(&damaged) {
            // Unused bytes may be damaged harmlessly: the data is whole.
            Ok(store) => assert_eq!(store.entities("cart", ShardId(1)).unwrap().len(), 200),
            Err(StoreError::Corrupt { .. }) => refused += 1,
            Err(other) => panic!("byte {at}: expected Corrupt, got {other:?}"),
        }
    }
    assert!(refused > 0, "some damage was detected");
}

#[test]
fn a_truncated_file_is_refused_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remember.redb");
    store_with_entities(&path);
    let len = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    match RedbStore::open(&path) {
        Err(StoreError::Corrupt { .. }) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_missing_folder_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-folder").join("remember.redb");
    match RedbStore::open(&path) {
        Err(StoreError::Io { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected Io, got {other:?}"),
    }
}

#[test]
fn an_empty_entity_id_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("remember.redb")).unwrap();
    let update = StoreUpdate::started(["a", ""]);
    assert!(matches!(
        store.update("cart", ShardId(0), &update),
        Err(StoreError::EmptyEntityId)
    ));
    assert!(store.entities("cart", ShardId(0)).unwrap().is_empty());
}

#[test]
fn a_file_of_a_later_schema_is_refused_and_left_as_it_was() {
    use redb::{Database, TableDefinition};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remember.redb");
    drop(RedbStore::open(&path).unwrap());
    let meta: TableDefinition<&str, u32> = TableDefinition::new("meta");
    let db = Database::create(&path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(meta)
        .unwrap()
        .insert("schema_version", 2)
        .unwrap();
    txn.commit().unwrap();
    drop(db);
    match RedbStore::open(&path) {
        Err(StoreError::UnsupportedSchema {
            found: 2,
            supported: 1,
            ..
        }) => {}
        other => panic!("expected UnsupportedSchema, got {other:?}"),
    }
}

#[test]
fn a_database_of_something_else_is_refused_and_not_written() {
    use redb::{Database, ReadableDatabase, TableDefinition, TableHandle};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.redb");
    let orders: TableDefinition<u64, &str> = TableDefinition::new("orders");
    let db = Database::create(&path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(orders).unwrap().insert(1, "book").unwrap();
    txn.commit().unwrap();
    drop(db);
    assert!(matches!(
        RedbStore::open(&path),
        Err(StoreError::ForeignDatabase { .. })
    ));
    let db = Database::create(&path).unwrap();
    let tables: Vec<String> = db
        .begin_read()
        .unwrap()
        .list_tables()
        .unwrap()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(tables, ["orders"], "nothing was added to it");
}
