//! The attack on memory, in a process of its own (resident memory
//! depends on what the allocator did before): 32 raw-socket connections
//! each declare their maximum of uid-less local paths (16,384, with nobody
//! there), then close. Such a ref kept an `ActorPath` and a map entry,
//! about 290 bytes, and 57 MB of 146 stayed resident after the
//! connections closed; now the paths share one string per connection,
//! given back as a block.

mod common;
mod counting_alloc;
mod raw_peer;

use common::Node;
use counting_alloc::live_bytes;
use raw_peer::refs::{all_closed, connect_as_mallory, declare, read_so_far};
use raw_peer::rss_bytes;
use volley_remote::transport::LimitSettings;

const MIB: usize = 1024 * 1024;
const CONNECTIONS: u32 = 32;

/// While open, a ref costs well under the 290 bytes it did; closed, the
/// connections leave nothing allocated, and resident memory comes back to
/// within 8 MB of where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_connections_at_their_cap_give_their_memory_back_once_closed() {
    let limits = LimitSettings::default();
    let max = limits.max_imported_refs as u32;
    let n: Node = common::node("at-cap", Default::default()).await;
    let addr = n.remoting.address().clone();
    let (rss, live) = (rss_bytes(), live_bytes());
    let mut streams = Vec::new();
    for c in 0..CONNECTIONS {
        let mut s = connect_as_mallory(&addr, c).await;
        declare(
            &mut s,
            max,
            |i| format!("{addr}/user/nobody-{c}-{i}"),
            |_| 0,
        )
        .await;
        read_so_far(&n, &mut s).await;
        streams.push(s);
    }
    let refs = (CONNECTIONS * max) as usize;
    let per_ref = (live_bytes() - live) as usize / refs;
    assert!(per_ref < 120, "{per_ref} bytes per declared ref");
    let accounted = n.remoting.imported_ref_bytes();
    let budget = CONNECTIONS as usize * limits.max_imported_ref_bytes;
    assert!(
        accounted >= refs * per_ref / 2 && accounted <= budget,
        "{accounted} bytes accounted for {refs} refs of {per_ref} bytes"
    );
    assert_eq!(n.remoting.import_refusals(), 0, "all within the limits");
    drop(streams);
    all_closed(&n).await;
    let left = live_bytes() - live;
    assert!(left < MIB as isize, "{left} bytes still allocated");
    let resident = rss_bytes().saturating_sub(rss);
    assert!(resident < 8 * MIB, "{resident} bytes still resident");
    n.system.terminate().await;
}
