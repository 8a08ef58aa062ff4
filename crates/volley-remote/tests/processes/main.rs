//! volley-remote's suites that start peer nodes in processes of their own:
//! the test binary runs itself again as the peer (`peer_process` below,
//! `two_processes::server_process`). Their tests take turns through
//! `peer_process::alone` and `peer_process::shared`.

#[path = "../common/mod.rs"]
mod common;
mod failover;
mod failover_delivery;
use volley_testkit::log_capture;
#[path = "../peer_process/mod.rs"]
mod peer_process;
#[path = "../raw_peer/mod.rs"]
mod raw_peer;
mod restart;
mod soak;
mod two_processes;

/// The peer's side of every test that starts one (`peer_process::Peer`):
/// does nothing unless started by such a test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the peer process of the other tests; runs only when they start it"]
async fn peer_process() {
    peer_process::run_peer().await;
}
