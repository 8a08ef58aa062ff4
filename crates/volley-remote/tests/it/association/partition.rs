//! Apache Pekko's multi-node `artery.SurviveNetworkPartitionSpec`
//! (`remote-tests`), carried over to two in-process nodes, each behind a
//! TCP relay that advertises itself as the node's canonical address: a
//! partition is both relays holding every byte back (as TCP does across a
//! real partition: nothing is lost, it waits), healing lets them go on.
//!
//! - "not quarantine system when it heals within
//!   'give-up-system-message-after'": a watch sent during a partition
//!   shorter than `give_up_system_message_after` takes once it heals;
//!   the node is not quarantined, the actor answers and its stop is
//!   reported: `a_partition_that_heals_in_time_quarantines_nothing`.
//! - "quarantine system when it doesn't heal within
//!   'give-up-system-message-after'": the watch waits longer than that for
//!   its ack; the node's incarnation is quarantined (the reason names the
//!   setting) and the watcher gets `Terminated`:
//!   `a_partition_longer_than_the_give_up_time_quarantines_the_node`.
//! - Artery's other bound on the same buffer, `system-message-buffer-size`
//!   (volley's `system_message_buffer_size`,
//!   docs/reference/remoting.md#delivery-of-system-messages), which no
//!   Pekko spec drives between two nodes:
//!   `more_unacknowledged_system_messages_than_the_buffer_quarantine_the_node`.
//!
//! Nothing else in the spec; the failure detector's own verdicts during a
//! partition are covered by `liveness/failure_detector.rs` and `control/remote_watch.rs`.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{add, free_port, node, record_events, spawn_calculator, Node, T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley_remote::{RemoteSettings, RemotingEvent};
use volley_testkit::TestProbe;

/// A TCP relay in front of a node's listener that can hold every byte, in
/// both directions, until it is told to let them go.
struct Relay {
    port: u16,
    held: Arc<AtomicBool>,
    accept: tokio::task::JoinHandle<()>,
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    held: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while held.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Relay {
    async fn start(target: u16, held: Arc<AtomicBool>) -> Relay {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let h = held.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (in_r, in_w) = inbound.into_split();
                let (out_r, out_w) = outbound.into_split();
                tokio::spawn(pump(in_r, out_w, h.clone()));
                tokio::spawn(pump(out_r, in_w, h.clone()));
            }
        });
        Relay { port, held, accept }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.held.store(false, Ordering::SeqCst);
        self.accept.abort();
    }
}

/// A node listening on a port of its own and known to its peers by its
/// relay's.
async fn behind_relay(
    name: &str,
    held: &Arc<AtomicBool>,
    settings: RemoteSettings,
) -> (Node, Relay) {
    let port = free_port();
    let relay = Relay::start(port, held.clone()).await;
    let settings = RemoteSettings {
        port,
        canonical_port: Some(relay.port),
        ..settings
    };
    (node(name, settings).await, relay)
}

/// The pair, with `settings` on A; the partition switch they share.
async fn partitioned_pair(settings: RemoteSettings) -> (Node, Node, Arc<AtomicBool>, [Relay; 2]) {
    let held = Arc::new(AtomicBool::new(false));
    let (a, relay_a) = behind_relay("partition-a", &held, settings).await;
    let (b, relay_b) = behind_relay("partition-b", &held, RemoteSettings::default()).await;
    (a, b, held, [relay_a, relay_b])
}

fn give_up_after(ms: u64) -> RemoteSettings {
    RemoteSettings {
        give_up_system_message_after: Duration::from_millis(ms),
        ..RemoteSettings::default()
    }
}

fn quarantines(events: &[RemotingEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RemotingEvent::Quarantined { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_that_heals_in_time_quarantines_nothing() {
    let (a, b, held, _relays) = partitioned_pair(give_up_after(4000)).await;
    spawn_calculator(&b, "echo1");
    let echo = common::remote_ref(&a, &b, "echo1");
    assert_eq!(add(&echo, 1, 1).await, 2);
    let events = record_events(&a);
    let probe = TestProbe::<u32>::new(&a.system);

    held.store(true, Ordering::SeqCst);
    probe.watch(&echo);
    // Shorter than the give-up time by a wide margin.
    tokio::time::sleep(Duration::from_millis(500)).await;
    held.store(false, Ordering::SeqCst);

    assert_eq!(add(&echo, 2, 2).await, 4);
    // Stopped on its node: the watch made during the partition took.
    b.system
        .stop(&b.system.lookup("/user/echo1").unwrap().unwrap());
    probe.expect_terminated_within(T, &echo);
    let seen = common::events_so_far(&events);
    assert!(quarantines(&seen).is_empty(), "{seen:?}");
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_longer_than_the_give_up_time_quarantines_the_node() {
    let (a, b, held, _relays) = partitioned_pair(give_up_after(1000)).await;
    spawn_calculator(&b, "echo2");
    let echo = common::remote_ref(&a, &b, "echo2");
    assert_eq!(add(&echo, 1, 1).await, 2);
    let b_uid = b.remoting.uid();
    let events = record_events(&a);
    let probe = TestProbe::<u32>::new(&a.system);

    held.store(true, Ordering::SeqCst);
    probe.watch(&echo);
    let seen = events.fish_for_within(T, |e| matches!(e, RemotingEvent::Quarantined { .. }));
    match seen.last() {
        Some(RemotingEvent::Quarantined {
            remote,
            uid,
            reason,
        }) => {
            assert_eq!(remote, b.remoting.address());
            assert_eq!(*uid, b_uid);
            assert!(reason.contains("give_up_system_message_after"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    probe.expect_terminated_within(T, &echo);
    held.store(false, Ordering::SeqCst);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_unacknowledged_system_messages_than_the_buffer_quarantine_the_node() {
    let settings = RemoteSettings {
        system_message_buffer_size: 3,
        ..RemoteSettings::default()
    };
    let (a, b, held, _relays) = partitioned_pair(settings).await;
    let echoes: Vec<_> = (0..4)
        .map(|i| {
            let name = format!("echo{i}");
            spawn_calculator(&b, &name);
            common::remote_ref(&a, &b, &name)
        })
        .collect();
    assert_eq!(add(&echoes[0], 1, 1).await, 2);
    let events = record_events(&a);
    // One watcher per actor: the order of their notices is not the point.
    let probes: Vec<_> = (0..4).map(|_| TestProbe::<u32>::new(&a.system)).collect();

    held.store(true, Ordering::SeqCst);
    // Three watches fill the buffer; none is acknowledged.
    for (probe, echo) in probes.iter().zip(&echoes).take(3) {
        probe.watch(echo);
    }
    probes[0].expect_no_msg(Duration::from_millis(300));
    assert!(quarantines(&common::events_so_far(&events)).is_empty());
    // The fourth is one too many.
    probes[3].watch(&echoes[3]);
    let seen = events.fish_for_within(T, |e| matches!(e, RemotingEvent::Quarantined { .. }));
    let reasons = quarantines(&seen);
    assert!(
        reasons.len() == 1 && reasons[0].contains("system_message_buffer_size"),
        "{seen:?}"
    );
    // Every watch ends, the one that overflowed the buffer too.
    for (probe, echo) in probes.iter().zip(&echoes) {
        probe.expect_terminated_within(T, echo);
    }
    held.store(false, Ordering::SeqCst);
    a.system.terminate().await;
    b.system.terminate().await;
}
