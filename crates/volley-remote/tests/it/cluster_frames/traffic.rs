//! Cluster frames are traffic: an association that carries them, either
//! way, is not stopped as idle (`stop_idle_outbound_after`), as one that
//! carries only heartbeats is.

use std::time::{Duration, Instant};

use volley_remote::transport::FailureDetectorSettings;
use volley_remote::wire::ClusterChannel;
use volley_remote::{AssociationState, RemoteSettings};

use super::{join, send_until_queued};
use crate::common::{eventually, node, Node};

const IDLE: Duration = Duration::from_millis(600);

fn idling() -> RemoteSettings {
    RemoteSettings {
        failure_detector: FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(50),
            acceptable_heartbeat_pause: Duration::from_millis(1000),
            ..FailureDetectorSettings::default()
        },
        stop_idle_outbound_after: IDLE,
        ..RemoteSettings::default()
    }
}

fn state(of: &Node, towards: &Node) -> Option<AssociationState> {
    of.remoting.association_state(towards.remoting.address())
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_frames_keep_an_association_from_idling() {
    let a = node("alpha", idling()).await;
    let b = node("beta", idling()).await;
    join(&a, "prod");
    let on_b = join(&b, "prod");
    send_until_queued(&a, &b, b"ping").await;
    eventually("b dialed a back", || state(&b, &a).is_some()).await;
    // Time passing is what is tested: three idle periods of frames one
    // way only, a's out and b's in.
    let start = Instant::now();
    while start.elapsed() < 3 * IDLE {
        let _ = a.remoting.send_cluster(
            b.remoting.address(),
            b.remoting.uid(),
            ClusterChannel::Swim,
            b"ping",
        );
        assert_eq!(state(&a, &b), Some(AssociationState::Active));
        assert_eq!(state(&b, &a), Some(AssociationState::Active));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!on_b.got().is_empty());
    // Without them, both stop (and, held by nothing, are removed): the
    // settings above do stop associations.
    let active = Some(AssociationState::Active);
    eventually("a's association stopped", || state(&a, &b) != active).await;
    eventually("b's association stopped", || state(&b, &a) != active).await;
    a.system.terminate().await;
    b.system.terminate().await;
}
