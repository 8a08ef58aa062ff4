//! `Remoting::send_cluster`: a datagram, queued only on an up control
//! connection to the intended incarnation with little queued, else
//! dropped with its reason and counted; never the cause of the control
//! queue's overflow (which quarantines).

use tokio::net::TcpListener;
use volley_remote::transport::ClusterSendError;
use volley_remote::wire::{Address, ClusterChannel};
use volley_remote::{AssociationState, RemoteSettings};

use super::{join, send_until_queued};
use crate::common::{
    add, eventually, free_port, node, patient_detector, remote_ref, spawn_calculator, T,
};
use crate::raw_peer::accept_as;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_in_no_cluster_sends_nothing() {
    let a = node("loner", RemoteSettings::default()).await;
    let to: Address = format!("volley://beta@127.0.0.1:{}", free_port())
        .parse()
        .unwrap();
    let sent = a
        .remoting
        .send_cluster(&to, 3, ClusterChannel::Swim, b"ping");
    assert_eq!(sent, Err(ClusterSendError::NotInCluster));
    assert_eq!(a.remoting.association_state(&to), None, "nothing started");
    assert_eq!(a.remoting.cluster_frame_counts().dropped_not_in_cluster, 1);
    a.system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_to_a_node_not_connected_are_dropped_not_queued() {
    let a = node("alpha", RemoteSettings::default()).await;
    join(&a, "prod");
    // Nobody listens there: the connection is never up.
    let to: Address = format!("volley://beta@127.0.0.1:{}", free_port())
        .parse()
        .unwrap();
    for _ in 0..10 {
        let sent = a
            .remoting
            .send_cluster(&to, 3, ClusterChannel::Swim, b"ping");
        assert_eq!(sent, Err(ClusterSendError::Connecting { node: to.clone() }));
    }
    assert_eq!(
        a.remoting.association_state(&to),
        Some(AssociationState::Active),
        "the association is made, as for the application's own sends"
    );
    let counts = a.remoting.cluster_frame_counts();
    assert_eq!((counts.dropped_connecting, counts.sent), (10, 0));
    a.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_for_another_incarnation_are_dropped() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    join(&a, "prod");
    join(&b, "prod");
    assert_eq!(a.remoting.incarnation_of(b.remoting.address()), None);
    send_until_queued(&a, &b, b"ping").await;
    let (to, uid) = (b.remoting.address(), b.remoting.uid());
    assert_eq!(
        a.remoting.incarnation_of(to),
        Some(uid),
        "known once connected"
    );
    let sent = a
        .remoting
        .send_cluster(to, uid + 1, ClusterChannel::Swim, b"ping");
    assert_eq!(
        sent,
        Err(ClusterSendError::OtherIncarnation {
            node: to.clone(),
            wanted: uid + 1,
            connected: uid,
        })
    );
    assert_eq!(
        a.remoting.cluster_frame_counts().dropped_other_incarnation,
        1
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A peer that reads nothing: the control lane's queue grows past
/// `cluster.queue_bytes`, and frames are dropped from there on, far below
/// `limits.max_control_queue_bytes`: the peer is not quarantined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_past_the_queue_budget_are_dropped_and_never_quarantine() {
    // The deaf peer never heartbeats: a patient detector keeps a loaded
    // machine's slow loop from quarantining it for silence.
    let a = node("alpha", patient_detector()).await;
    join(&a, "prod");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let deaf: Address = format!("volley://deaf@127.0.0.1:{port}").parse().unwrap();
    // Answers the control lane's handshake as incarnation 11, then keeps
    // the connection without reading it.
    let answer = {
        let deaf = deaf.clone();
        tokio::spawn(async move { accept_as(&listener, &deaf).await })
    };
    let payload = vec![0x5a; 60 * 1024];
    let send = || {
        a.remoting
            .send_cluster(&deaf, 11, ClusterChannel::SyncData, &payload)
    };
    eventually("the control connection up", || send().is_ok()).await;
    let _held = tokio::time::timeout(T, answer).await.unwrap().unwrap();
    // The socket's buffers take some first; a bounded number of sends
    // fills them (loopback buffers are a few MiB). A drop may come while
    // the writer is behind, and the next send fit again once it has
    // written: send until ten in a row are dropped, the socket full.
    let (mut dropped, mut in_a_row, mut last) = (0u64, 0, Ok(()));
    for _ in 0..8192 {
        last = send();
        match &last {
            Err(ClusterSendError::OverBudget { queued, budget, .. }) => {
                assert_eq!(*budget, 64 * 1024);
                assert!(queued + payload.len() > *budget);
                dropped += 1;
                in_a_row += 1;
            }
            Ok(()) => in_a_row = 0,
            Err(other) => panic!("not dropped for the budget: {other:?}"),
        }
        if in_a_row == 10 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(in_a_row, 10, "never ten drops in a row: {last:?}");
    assert_eq!(
        a.remoting.cluster_frame_counts().dropped_over_budget,
        dropped
    );
    assert_eq!(
        a.remoting.association_state(&deaf),
        Some(AssociationState::Active),
        "not quarantined"
    );
    a.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_to_a_node_that_left_are_dropped() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    join(&a, "prod");
    join(&b, "prod");
    // A ref a holds keeps its association, down, once b is gone (else
    // it is removed, and a send would start a new one).
    spawn_calculator(&b, "calc");
    let calc = remote_ref(&a, &b, "calc");
    assert_eq!(add(&calc, 1, 2).await, 3);
    send_until_queued(&a, &b, b"ping").await;
    let (to, uid) = (b.remoting.address().clone(), b.remoting.uid());
    b.system.terminate().await;
    eventually("b's departure known", || {
        a.remoting.association_state(&to) == Some(AssociationState::Down)
    })
    .await;
    let sent = a
        .remoting
        .send_cluster(&to, uid, ClusterChannel::Swim, b"ping");
    assert_eq!(sent, Err(ClusterSendError::Down { node: to.clone() }));
    assert_eq!(a.remoting.cluster_frame_counts().dropped_down, 1);
    a.system.terminate().await;
}
