//! The export table gives the ids of stopped actors' refs out again
//! (`transport/refs/tables/lasting_ids.rs`, wire-protocol.md §13): bursts
//! of per-request workers that send their own refs to a peer, far more of
//! them than the table's bound, while long-lived actors keep their ids,
//! and the connection is cut now and then, so that new connections start
//! by declaring ids some of which were released or given out again. Every
//! answer must reach the actor that asked for it, and no ref may need the
//! fallback for a table with no free id (a ring id declared with each
//! message, which the transport logs).

use crate::common;
use crate::log_capture;

use std::collections::HashMap;
use std::time::Duration;

use common::relay::Relay;
use common::tagged::tagged;
use common::{node, spawn_calculator, Calc, Node, T};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use volley::ActorRef;
use volley_remote::transport::LimitSettings;
use volley_remote::RemoteSettings;

/// Asks `calc` to add `tag` to 0 for each of `askers`, again for those not
/// answered within a short while (a cut connection loses what it had
/// taken), until every one has its answer; an answer under another actor's
/// tag fails the test.
async fn ask_all(
    calc: &ActorRef<Calc>,
    askers: &[(u64, ActorRef<i64>)],
    rx: &mut UnboundedReceiver<(u64, i64)>,
) {
    let mut waiting: HashMap<u64, &ActorRef<i64>> =
        askers.iter().map(|(tag, actor)| (*tag, actor)).collect();
    let start = std::time::Instant::now();
    while !waiting.is_empty() {
        assert!(start.elapsed() < T, "no answer for {:?}", waiting.keys());
        for (tag, actor) in &waiting {
            calc.tell(Calc::Add {
                a: *tag as i64,
                b: 0,
                reply_to: (*actor).clone(),
            });
        }
        let round = tokio::time::Instant::now() + Duration::from_millis(300);
        while let Ok(Some((tag, n))) = tokio::time::timeout_at(round, rx.recv()).await {
            assert_eq!(tag as i64, n, "an answer reached another actor's ref");
            waiting.remove(&tag);
            if waiting.is_empty() {
                break;
            }
        }
    }
    // Answers to repeated asks may still come: each under its own tag.
    while let Ok(Some((tag, n))) = tokio::time::timeout(Duration::from_millis(20), rx.recv()).await
    {
        assert_eq!(tag as i64, n, "an answer reached another actor's ref");
    }
}

/// Fails the test if a connection between `nodes` ran out of lasting ids
/// (the log names the ref's path, which holds its node's address; other
/// tests in this binary run out on purpose).
fn assert_ids_were_reused(nodes: &[&Node]) {
    let addresses: Vec<String> = nodes
        .iter()
        .map(|n| n.remoting.address().to_string())
        .collect();
    let fallbacks = log_capture::events(|e| {
        e.text.starts_with("every lasting ref id")
            && addresses.iter().any(|a| e.text.contains(a.as_str()))
    });
    assert!(fallbacks.is_empty(), "ids ran out: {fallbacks:?}");
}

fn limited(max_exported_refs: usize) -> LimitSettings {
    LimitSettings {
        max_exported_refs,
        ..LimitSettings::default()
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_request_workers_reuse_the_ids_of_stopped_ones() {
    log_capture::install();
    let a = node(
        "sequential-a",
        RemoteSettings {
            limits: limited(32),
            ..RemoteSettings::default()
        },
    )
    .await;
    let b = node("sequential-b", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let calc = common::remote_ref(&a, &b, "calc");
    let (tx, mut rx) = unbounded_channel();
    for tag in 1..=200u64 {
        let worker = tagged(&a, &format!("worker{tag}"), tag, &tx);
        ask_all(&calc, &[(tag, worker.clone())], &mut rx).await;
        a.system.stop(&worker);
        common::eventually("the worker to stop", || worker.is_terminated()).await;
    }
    assert_ids_were_reused(&[&a, &b]);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_ids_keep_naming_the_right_actors_across_reconnects() {
    log_capture::install();
    let port = common::free_port();
    let relay = Relay::start(port).await;
    let b = node(
        "reuse-b",
        RemoteSettings {
            port,
            canonical_port: Some(relay.port),
            ..RemoteSettings::default()
        },
    )
    .await;
    let a = node(
        "reuse-a",
        RemoteSettings {
            reconnect_backoff: Duration::from_millis(20),
            reconnect_backoff_max: Duration::from_millis(100),
            limits: limited(64),
            ..RemoteSettings::default()
        },
    )
    .await;
    spawn_calculator(&b, "calc");
    let calc = common::remote_ref(&a, &b, "calc");
    let (tx, mut rx) = unbounded_channel();
    // Three actors live through the whole test: their ids must not move.
    let lasting: Vec<(u64, ActorRef<i64>)> = (0..3u64)
        .map(|t| (t, tagged(&a, &format!("lasting{t}"), t, &tx)))
        .collect();
    let mut next_tag = 100u64;
    for round in 0..30 {
        let workers: Vec<(u64, ActorRef<i64>)> = (0..4)
            .map(|_| {
                next_tag += 1;
                let worker = tagged(&a, &format!("worker{next_tag}"), next_tag, &tx);
                (next_tag, worker)
            })
            .collect();
        let mut askers = workers.clone();
        askers.extend(lasting.iter().cloned());
        ask_all(&calc, &askers, &mut rx).await;
        for (_, worker) in &workers {
            a.system.stop(worker);
        }
        common::eventually("the workers to stop", || {
            workers.iter().all(|(_, w)| w.is_terminated())
        })
        .await;
        if round % 4 == 3 {
            relay.cut();
        }
    }
    assert!(next_tag - 100 > 64, "more workers than ids");
    assert_ids_were_reused(&[&a, &b]);
    a.system.terminate().await;
    b.system.terminate().await;
}
