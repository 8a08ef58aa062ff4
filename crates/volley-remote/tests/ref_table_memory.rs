//! What the ref tables cost in memory, and that it is given back: refs
//! declared by raw-socket peers up to `limits.max_imported_ref_bytes`,
//! then the connections closed; and nodes shut down in this process,
//! whose export tables held refs to their peers' actors. What is measured
//! is the bytes allocated and not freed (`counting_alloc`, which is why
//! this file has its own test binary); `ref_table_resident.rs` measures
//! resident memory. The tests take turns (`SERIAL`), so that none
//! measures another's allocations.

mod common;
mod counting_alloc;
mod raw_peer;

use std::time::Duration;

use common::Node;
use counting_alloc::live_bytes;
use raw_peer::closed_within;
use raw_peer::refs::{all_closed, connect_as_mallory, declare, read_so_far};
use volley_remote::transport::LimitSettings;
use volley_remote::wire::Address;
use volley_remote::RemoteSettings;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MIB: usize = 1024 * 1024;
const CONNECTIONS: u32 = 32;
/// The default `limits.max_imported_refs`.
const MAX_REFS: u32 = 16_384;

async fn node(name: &str, limits: LimitSettings) -> Node {
    let settings = RemoteSettings {
        limits,
        ..RemoteSettings::default()
    };
    common::node(name, settings).await
}

/// Refs to actors of other nodes cost a handle and a route each: past the
/// byte budget, a connection is closed and counted, however many refs the
/// count would still allow. Their memory is freed with the connection
/// (held in small blocks, it may stay resident for the allocator to reuse,
/// so that is what is measured).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_to_other_nodes_are_held_to_the_byte_budget_and_freed_with_the_connection() {
    let _serial = SERIAL.lock().await;
    let n = node("remote-refs", LimitSettings::default()).await;
    let addr = n.remoting.address().clone();
    let live = live_bytes();
    let budget = LimitSettings::default().max_imported_ref_bytes;
    let mut streams = Vec::new();
    for c in 0..CONNECTIONS {
        let mut s = connect_as_mallory(&addr, c).await;
        let path = |i| format!("volley://elsewhere@127.0.0.1:10/user/x-{c}-{i}");
        declare(&mut s, MAX_REFS, path, |i| u64::from(i) + 1).await;
        assert!(
            closed_within(&mut s, Duration::from_secs(20)).await,
            "over its byte budget, connection {c} is closed"
        );
        streams.push(s);
    }
    assert_eq!(n.remoting.import_refusals(), u64::from(CONNECTIONS));
    all_closed(&n).await;
    let most = (CONNECTIONS as usize * budget) as isize;
    let left = live_bytes() - live;
    eprintln!("DBG left {left}");
    assert!(
        left < MIB as isize,
        "{left} bytes still allocated (of {most} at most)"
    );
    drop(streams);
    n.system.terminate().await;
}

/// Elements of a path over 1000 bytes long (a name is at most 255).
fn kilobyte_path(addr: &Address, n: u32) -> String {
    let name = "k".repeat(200);
    format!("{addr}/user/{name}/{name}/{name}/{name}/{name}{n}")
}

/// Long paths are what the count alone does not bound: 64 KiB hold about
/// 30 uid-less kilobyte paths; the connection that declares more is
/// closed, and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_byte_budget_the_connection_is_closed_and_counted() {
    let _serial = SERIAL.lock().await;
    let limits = LimitSettings {
        max_imported_ref_bytes: 64 * 1024,
        ..LimitSettings::default()
    };
    let n = node("byte-budget", limits).await;
    let addr = n.remoting.address().clone();
    let mut s = connect_as_mallory(&addr, 0).await;
    declare(&mut s, 20, |i| kilobyte_path(&addr, i), |_| 0).await;
    read_so_far(&n, &mut s).await;
    let held = n.remoting.imported_ref_bytes();
    assert!(
        (20 * 1000..=64 * 1024).contains(&held),
        "20 kilobyte paths hold {held} bytes"
    );
    // The same ids again: replaced, not added.
    declare(&mut s, 20, |i| kilobyte_path(&addr, i), |_| 0).await;
    read_so_far(&n, &mut s).await;
    assert_eq!(n.remoting.imported_ref_bytes(), held);
    assert_eq!(n.remoting.import_refusals(), 0);
    declare(&mut s, 40, |i| kilobyte_path(&addr, i), |_| 0).await;
    assert!(closed_within(&mut s, Duration::from_secs(10)).await);
    assert_eq!(n.remoting.import_refusals(), 1);
    all_closed(&n).await;
    n.system.terminate().await;
}

/// A node shut down in this process after talking to a peer is freed: its
/// lanes' export tables held refs to the peer's actors, whose routes hold
/// the association, which holds those tables, so the node stayed
/// allocated for good (a few hundred kilobytes each time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_shut_down_after_talking_to_a_peer_is_freed() {
    let _serial = SERIAL.lock().await;
    let a = node("long-lived", LimitSettings::default()).await;
    common::spawn_calculator(&a, "calc");
    // One address for all: the long-lived node keeps an association per
    // address for a while, which is not what this measures.
    let port = common::free_port();
    let round = || async {
        let settings = RemoteSettings {
            port,
            ..RemoteSettings::default()
        };
        let b = common::node("short-lived", settings).await;
        let calc = common::remote_ref(&b, &a, "calc");
        assert_eq!(common::add(&calc, 1, 2).await, 3);
        b.system.terminate().await;
    };
    round().await;
    let live = live_bytes();
    for _ in 0..10 {
        round().await;
    }
    // Connections of the last rounds end after the rounds return (their
    // read buffers alone are hundreds of kilobytes): what is left is
    // judged once they could have, while a leak stays.
    let what = "10 nodes to leave less than 1 MiB allocated";
    volley_testkit::eventually_within(Duration::from_secs(10), what, || {
        live_bytes() - live < MIB as isize
    })
    .await;
    a.system.terminate().await;
}
