//! The store across processes: a file held by another process is
//! refused, and a process killed mid-writes leaves every write that had
//! returned. The child halves are `#[ignore]`d tests of this binary, run
//! again as a child process.

use std::io::{BufRead, BufReader, Lines};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use volley_cluster::sharding::store::{RedbStore, RememberStore, StoreError, StoreUpdate};
use volley_cluster::sharding::ShardId;

const CHILD_PATH_VAR: &str = "VOLLEY_STORE_TEST_CHILD_PATH";
const OPEN_LINE: &str = "store-open";
const WRITTEN: &str = "written ";

/// Starts this binary's test `child_test` on the store at `path`.
fn spawn_child(child_test: &str, path: &Path) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child_test, "--ignored", "--nocapture"])
        .env(CHILD_PATH_VAR, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// The store a child half opens; `None` when run as a test of its own.
fn child_store() -> Option<RedbStore> {
    let path = std::env::var(CHILD_PATH_VAR).ok()?;
    Some(RedbStore::open(path).unwrap())
}

/// Holds the store open until its standard input closes.
#[test]
#[ignore = "the child of another_process_holding_the_file_makes_the_open_fail_as_locked"]
fn child_holding_the_store_open() {
    let Some(_store) = child_store() else { return };
    println!("{OPEN_LINE}");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut rest);
}

#[test]
fn another_process_holding_the_file_makes_the_open_fail_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remember.redb");
    let (mut child, mut lines) = spawn_child("processes::child_holding_the_store_open", &path);
    // Waits for the child's word that it holds the file, not for a time.
    let opened = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.ends_with(OPEN_LINE));
    assert!(opened, "the child opened the store");
    let refused = RedbStore::open(&path);
    drop(child.stdin.take());
    // Reads the child's last lines, so that it can write them and exit.
    lines.for_each(drop);
    assert!(child.wait().unwrap().success());
    match refused {
        Err(StoreError::Locked { .. }) => {}
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(
        RedbStore::open(&path).is_ok(),
        "the child's exit released the file"
    );
}

/// Remembers entity after entity, saying so after each write returned,
/// until it is killed.
#[test]
#[ignore = "the child of a_process_killed_mid_writes_keeps_every_write_that_returned"]
fn child_writing_until_killed() {
    let Some(store) = child_store() else { return };
    // Bounded, and a closed pipe (the parent gone) ends it too.
    for i in 0u64..1_000_000 {
        let update = StoreUpdate::started([format!("e{i}")]);
        store.update("cart", ShardId(1), &update).unwrap();
        println!("{WRITTEN}{i}");
    }
}

#[test]
fn a_process_killed_mid_writes_keeps_every_write_that_returned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remember.redb");
    let (mut child, mut lines) = spawn_child("processes::child_writing_until_killed", &path);
    let last_line = format!("{WRITTEN}20");
    let reached = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.ends_with(&last_line));
    assert!(reached, "the child wrote 21 entities");
    child.kill().unwrap(); // SIGKILL: no destructor runs, the file is left open
    child.wait().unwrap();
    let store = RedbStore::open(&path).expect("the file opens after the crash");
    let remembered = store.entities("cart", ShardId(1)).unwrap();
    for i in 0..=20 {
        assert!(remembered.contains(&format!("e{i}")), "e{i} was written");
    }
}
