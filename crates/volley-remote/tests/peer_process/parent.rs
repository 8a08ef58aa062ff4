//! The test's own side: its node, refs to the peer's actors, and the
//! bounds the failover tests judge by.

use super::*;
use crate::common::T;

/// No failover test needs longer, even on a loaded machine.
pub const LIMIT: Duration = Duration::from_secs(90);

pub const INTERVAL_MS: u64 = 100;

pub const PAUSE_MS: u64 = 500;

/// How long after a peer stops a watcher may wait for its verdict: the
/// heartbeat interval plus the acceptable pause (the detector's own
/// estimate adds about 0.6 s of phi rising over the deviation floor), plus
/// 3 s for a loaded machine.
pub fn detection_bound(interval_ms: u64, pause_ms: u64) -> Duration {
    Duration::from_millis(interval_ms + pause_ms) + Duration::from_secs(3)
}

/// The test's own node, listening on any port.
pub async fn parent(interval_ms: u64, pause_ms: u64) -> Node {
    local_node(
        "parent",
        remote_settings(0, &detector(interval_ms, pause_ms)),
        &[],
    )
    .await
}

/// `node`'s ref to the peer's `/user/<name>`, whatever its incarnation.
pub fn by_path(node: &Node, peer: &Address, name: &str) -> ActorRef<Load> {
    node.remoting
        .resolve::<Load>(&format!("{peer}/user/{name}"))
        .unwrap()
}

/// Asks `sink` what arrived: `[small, big, out of order]`.
pub async fn sink_report(sink: &ActorRef<Load>) -> Vec<u64> {
    sink.ask(Load::Report, T).await.unwrap()
}

/// Waits until `seen` records the association with incarnation `uid` of
/// `remote`.
pub async fn associated(seen: &Seen<RemotingEvent>, remote: &Address, uid: u64) {
    let expected = RemotingEvent::Associated {
        remote: remote.clone(),
        uid,
    };
    wait_until(T, &format!("{expected:?}"), || {
        seen.values().contains(&expected)
    })
    .await;
}
