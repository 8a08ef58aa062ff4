//! A node whose peer restarts dials the new incarnation at once, whatever
//! reconnect pause its lanes are in: the restarted node judges it from
//! their first contact, and a survivor sleeping off the old incarnation's
//! outage would keep its heartbeats (and its answers) away meanwhile.
//! (`restart_processes.rs` kills and restarts a peer process with the
//! default back-off; here the pause is made long enough that nothing but
//! the new incarnation can end it within the test.)

use crate::common;

use std::time::Duration;

use common::{ask_sum, free_port, node, record_events, remote_ref, spawn_calculator, T};
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::{DisassociationReason, RemoteSettings, RemotingEvent};

/// Lanes that pause 24 to 36 s after a lost connection, and a detector
/// that gives nobody up while the test runs.
fn patient(port: u16) -> RemoteSettings {
    RemoteSettings {
        port,
        reconnect_backoff: Duration::from_millis(30_000),
        reconnect_backoff_max: Duration::from_millis(30_000),
        failure_detector: FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(50),
            acceptable_heartbeat_pause: Duration::from_millis(60_000),
            ..FailureDetectorSettings::default()
        },
        ..RemoteSettings::default()
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_incarnation_ends_the_survivors_reconnect_pause() {
    let port = free_port();
    let a = node("survivor", patient(0)).await;
    spawn_calculator(&a, "calc");
    let events = record_events(&a);
    let first = node("restarting", patient(port)).await;
    spawn_calculator(&first, "calc");
    assert_eq!(
        ask_sum(&remote_ref(&a, &first, "calc"), T).await.unwrap(),
        42
    );
    let address = first.remoting.address().clone();

    // Gone without a goodbye: the survivor's lanes lose their connections
    // and pause before dialing again.
    first.remoting.shutdown();
    first.system.terminate().await;
    events.fish_for(|e| {
        matches!(e, RemotingEvent::Disassociated { remote, reason: DisassociationReason::ConnectionLost(_) }
            if *remote == address)
    });

    let second = node("restarting", patient(port)).await;
    assert_eq!(second.remoting.address(), &address);
    spawn_calculator(&second, "calc");
    // The new incarnation talks first; the answer travels on the
    // survivor's lanes, which must dial it now, not after their pause.
    let within = Duration::from_secs(5);
    let answer = ask_sum(&remote_ref(&second, &a, "calc"), within).await;
    assert_eq!(
        answer.ok(),
        Some(42),
        "no answer from the survivor within {within:?}"
    );
    let answer = ask_sum(&remote_ref(&a, &second, "calc"), within).await;
    assert_eq!(
        answer.ok(),
        Some(42),
        "the survivor's ask took longer than {within:?}"
    );
    common::eventually("the survivor's heartbeats to be answered", || {
        second
            .remoting
            .heartbeat_rtt(a.remoting.address())
            .is_some()
    })
    .await;
    a.system.terminate().await;
    second.system.terminate().await;
}
