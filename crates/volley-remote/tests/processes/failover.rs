//! Remote failure handling against a peer in a second OS process: killed
//! with SIGKILL, stalled with SIGSTOP, restarted on the same port, or
//! flooded with 10 MB messages (part two, `failover_delivery_processes.rs`:
//! messages across a death, a graceful leave, a remote job). The detector runs with short
//! settings (heartbeats every 100 ms) so that the suite stays fast; the
//! time bounds below are generous limits for a loaded machine, not speed
//! targets.
//!
//! Each test has two processes with their own thread pools on the
//! machine. The ones that hold a peer to a time bound, assert that a live
//! node is not suspected, or count every warning run alone
//! (`peer_process::alone`): they should not compete with another test's
//! 10 MB messages. The others may share the machine with one more.

use crate::common;
use crate::log_capture;
use crate::peer_process;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{add, Calc, Node, T};
use peer_process::{
    associated, bounded, by_path, detection_bound, detector, free_port, local_node, parent,
    record_events, remote_settings, runtime_panics, sink_report, spawn_watcher, wait_until,
    watch_panics, Bulk, Load, Peer, PeerConfig, Seen, WatcherMsg, INTERVAL_MS, LIMIT, PAUSE_MS,
};
use tracing::Level;
use volley::ActorRef;
use volley_remote::wire::Address;
use volley_remote::RemotingEvent;

/// `path#uid`, as the watcher records a `Terminated`.
fn watch_key<M: Send + 'static>(r: &ActorRef<M>) -> String {
    format!("{}#{}", r.path(), r.to_any().uid())
}

/// Waits until `system`'s dead-letter count has not moved for 500 ms.
async fn settled_dead_letters(node: &Node) -> u64 {
    let start = Instant::now();
    let mut last = node.system.dead_letter_count();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = node.system.dead_letter_count();
        if now == last {
            return now;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the dead-letter count keeps moving"
        );
        last = now;
    }
}

/// The events `seen` recorded about `remote`, other than `Associated`.
fn trouble(seen: &Seen<RemotingEvent>, remote: &Address) -> Vec<RemotingEvent> {
    seen.all()
        .into_iter()
        .map(|(_, e)| e)
        .filter(|e| match e {
            RemotingEvent::Associated { .. } => false,
            RemotingEvent::Disassociated { remote: r, .. }
            | RemotingEvent::Quarantined { remote: r, .. }
            | RemotingEvent::AddressTerminated { remote: r, .. } => r == remote,
        })
        .collect()
}

/// SIGKILL while tells stream to the peer: each of five watched actors
/// there gets exactly one `Terminated`, within the detector's bound; the
/// watcher lives on; and what is sent to the dead node afterwards is
/// counted as dead letters at once instead of waiting in its queue.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_gives_one_terminated_per_watched_actor_and_frees_the_queue() {
    let _turn = peer_process::shared().await;
    watch_panics();
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let mut peer = Peer::start(&PeerConfig::new(INTERVAL_MS, PAUSE_MS)).await;
        let (watcher, terminated) = spawn_watcher(&a.system);
        let mut watched = Vec::new();
        for i in 0..5 {
            // Spawned remotely: a ref to this very incarnation of the actor.
            let w: ActorRef<Calc> = a
                .remoting
                .spawn_remote(&peer.address, "calculator", Some(&format!("w{i}")), &(), T)
                .await
                .unwrap();
            assert_eq!(add(&w, i, 1).await, i + 1);
            watcher.tell(WatcherMsg::Watch(w.to_any()));
            watched.push(w);
        }
        // The watcher has sent its watches once it answers a ping after
        // them: each is registered here and on its way.
        assert_eq!(watcher.ask(WatcherMsg::Ping, T).await.unwrap(), 1);
        // No Terminated for a live actor: a window for a wrong one to
        // arrive (what is checked), not a synchronisation.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            terminated.all().is_empty(),
            "Terminated for live actors: {:?}",
            terminated.values()
        );

        let sink = by_path(&a, &peer.address, "sink");
        let stop = Arc::new(AtomicBool::new(false));
        let streaming = {
            let (sink, stop) = (sink.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..100 {
                        sink.tell(Load::Small { n });
                        n += 1;
                    }
                    // Paces the stream.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
        };
        let deadline = Instant::now() + T;
        while peer.report().await[0] == 0 {
            assert!(
                Instant::now() < deadline,
                "the stream does not reach the peer"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let killed = Instant::now();
        peer.kill();
        let bound = detection_bound(INTERVAL_MS, PAUSE_MS);
        wait_until(bound, "a Terminated for each watched actor", || {
            terminated.len() >= watched.len()
        })
        .await;
        // Room for a duplicate to show up: several heartbeat intervals and
        // detector rounds.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        stop.store(true, Ordering::Relaxed);
        streaming.await.unwrap();

        let mut got = terminated.values();
        got.sort();
        let mut expected: Vec<String> = watched.iter().map(watch_key).collect();
        expected.sort();
        assert_eq!(got, expected, "one Terminated per watched actor");
        for (at, who) in terminated.all() {
            let after = at.duration_since(killed);
            assert!(
                after <= bound,
                "Terminated for {who} {after:?} after the kill"
            );
        }
        assert!(watched.iter().all(ActorRef::is_terminated));
        assert_eq!(watcher.ask(WatcherMsg::Ping, T).await.unwrap(), 1);
        assert!(!watcher.is_terminated(), "the watcher stays alive");

        let before = settled_dead_letters(&a).await;
        for n in 0..1000 {
            sink.tell(Load::Small { n });
        }
        wait_until(
            Duration::from_secs(3),
            "tells to the dead node to be counted as dead letters",
            || a.system.dead_letter_count() >= before + 1000,
        )
        .await;
        // And no more: a window for a tell counted twice to show.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(a.system.dead_letter_count(), before + 1000);
        assert_eq!(runtime_panics(), Vec::<String>::new());
        a.system.terminate().await;
    })
    .await;
}

/// A peer killed and started again on the same port: the new incarnation
/// associates and answers, while a ref to an actor of the old one stays
/// terminated and does not reach the actor now at its path.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_restarted_on_the_same_port_is_a_new_incarnation() {
    let _turn = peer_process::shared().await;
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let events = record_events(&a.system);
        let (watcher, terminated) = spawn_watcher(&a.system);
        let mut config = PeerConfig::new(INTERVAL_MS, PAUSE_MS);
        config.port = free_port();
        let mut first = Peer::start(&config).await;
        let address = first.address.clone();
        let sink = by_path(&a, &address, "sink");
        assert_eq!(sink_report(&sink).await, vec![0, 0, 0]);
        let old: ActorRef<Load> = a
            .remoting
            .spawn_remote(&address, "sink", Some("x"), &(), T)
            .await
            .unwrap();
        assert_eq!(sink_report(&old).await, vec![0, 0, 0]);
        watcher.tell(WatcherMsg::Watch(old.to_any()));
        let first_uid = first.uid;
        associated(&events, &address, first_uid).await;

        first.kill();
        wait_until(
            detection_bound(INTERVAL_MS, PAUSE_MS),
            "Terminated for the old actor",
            || terminated.len() == 1,
        )
        .await;
        assert!(old.is_terminated());

        // The new incarnation has its own actor at the old one's path.
        config.extra_sinks = vec!["x".into()];
        let mut second = Peer::start(&config).await;
        assert_eq!(second.address, address);
        assert_ne!(second.uid, first_uid);
        // Nobody sends to the new node: this node's lanes, retrying since
        // the kill, find it.
        associated(&events, &address, second.uid).await;
        // The ref resolved by path before the kill reaches the new node.
        assert!(!sink.is_terminated(), "a ref without a uid lives again");
        assert_eq!(sink_report(&sink).await, vec![0, 0, 0]);

        assert!(old.is_terminated(), "the old incarnation's ref stays dead");
        let dead_here = a.system.dead_letter_count();
        for n in 0..10 {
            old.tell(Load::Small { n });
        }
        let asked = old.ask(Load::Report, Duration::from_secs(1)).await;
        assert!(
            asked.is_err(),
            "the old ref reached an actor: answered {asked:?}"
        );
        let new_x = by_path(&a, &address, "x");
        assert_eq!(
            sink_report(&new_x).await,
            vec![0, 0, 0],
            "the new actor at the old path got nothing sent to the old ref"
        );
        // Each of those tells is a dead letter on one side or the other
        // (the report above came behind them on the same lane, so the
        // peer has read them all).
        let dead_there = second.dead_letters().await.len() as u64;
        assert_eq!(
            a.system.dead_letter_count() - dead_here + dead_there,
            10,
            "tells to the old ref, counted here and on the new incarnation"
        );
        assert_eq!(terminated.len(), 1);
        a.system.terminate().await;
    })
    .await;
}

/// SIGSTOP: the stalled peer is judged unreachable once its silence
/// exceeds the pause, and given up: its incarnation is quarantined, refs
/// to it are terminated, and after SIGCONT it learns of the quarantine and
/// quarantines this node in turn.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_peer_is_detected_as_unreachable_and_quarantined() {
    let _turn = peer_process::alone().await;
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let events = record_events(&a.system);
        let mut peer = Peer::start(&PeerConfig::new(INTERVAL_MS, PAUSE_MS)).await;
        let sink = by_path(&a, &peer.address, "sink");
        // The answer travels on the peer's own association to us, which
        // sends the heartbeats we judge.
        assert_eq!(sink_report(&sink).await, vec![0, 0, 0]);
        wait_until(T, "the peer's heartbeats", || {
            a.remoting.is_reachable(&peer.address) == Some(true)
        })
        .await;
        // A history of heartbeats for the detector: a second of them, the
        // steady state the stall interrupts (part of the scenario).
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert_eq!(a.remoting.is_reachable(&peer.address), Some(true));

        peer.signal("STOP");
        let stopped = Instant::now();
        let bound = detection_bound(INTERVAL_MS, PAUSE_MS);
        wait_until(bound, "the stalled peer to be judged unreachable", || {
            a.remoting.is_reachable(&peer.address) == Some(false)
        })
        .await;
        let took = stopped.elapsed();
        // Its last heartbeat may have left up to one interval before the
        // stop.
        assert!(
            took >= Duration::from_millis(PAUSE_MS - INTERVAL_MS),
            "judged unreachable {took:?} after the stop, within the pause"
        );
        let (address, uid) = (peer.address.clone(), peer.uid);
        wait_until(T, "the stalled incarnation to be quarantined", || {
            events.all().iter().any(|(_, e)| {
                matches!(e, RemotingEvent::Quarantined { remote, uid: u, .. }
                    if *remote == address && *u == uid)
            })
        })
        .await;
        assert!(sink.is_terminated(), "its node was given up");

        peer.signal("CONT");
        let me = a.remoting.address();
        let learned = peer.line(&format!("EVENT Quarantined {me} "), T).await;
        assert!(
            learned.starts_with(&format!("uid={} ", a.remoting.uid())),
            "the peer quarantined another incarnation of us: {learned}"
        );
        a.system.terminate().await;
    })
    .await;
}

/// Issue 29 (6): a peer stalled past the pause while it streams tells to
/// this node is quarantined; after SIGCONT, none of what it sends reaches
/// an actor here. The peer's own pause is long, so that it goes on
/// sending until this node tells it of the quarantine.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_a_stalled_and_quarantined_peer_sends_after_sigcont_is_delivered() {
    let _turn = peer_process::shared().await;
    bounded(LIMIT, async {
        let settings = remote_settings(0, &detector(INTERVAL_MS, PAUSE_MS));
        let a = local_node("parent", settings, &["ticks"]).await;
        let events = record_events(&a.system);
        let mut peer = Peer::start(&PeerConfig::new(INTERVAL_MS, 20_000)).await;
        let ticks = a
            .system
            .lookup("/user/ticks")
            .unwrap()
            .unwrap()
            .downcast::<Load>()
            .unwrap();
        peer.command(&format!("tick {}/user/ticks", a.remoting.address()));
        peer.line("TICKING", T).await;
        wait_until(T, "the peer's heartbeats", || {
            a.remoting.is_reachable(&peer.address) == Some(true)
        })
        .await;
        let deadline = Instant::now() + T;
        while sink_report(&ticks).await[0] == 0 {
            assert!(Instant::now() < deadline, "the ticks do not arrive");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        peer.signal("STOP");
        let (address, uid) = (peer.address.clone(), peer.uid);
        wait_until(T, "the stalled incarnation to be quarantined", || {
            events.all().iter().any(|(_, e)| {
                matches!(e, RemotingEvent::Quarantined { remote, uid: u, .. }
                    if *remote == address && *u == uid)
            })
        })
        .await;
        // The peer is stopped: all it will ever have delivered here.
        let at_verdict = sink_report(&ticks).await[0];
        peer.signal("CONT");
        let me = a.remoting.address();
        peer.line(&format!("EVENT Quarantined {me} "), T).await;
        // Time passing is the point: what it sent after SIGCONT had its
        // chance to arrive.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            sink_report(&ticks).await[0],
            at_verdict,
            "ticks of a quarantined incarnation were delivered"
        );
        a.system.terminate().await;
    })
    .await;
}

/// A stall shorter than the acceptable pause is not a failure: no
/// `Terminated`, no quarantine, no disassociation, and the tells sent
/// meanwhile arrive, in order.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_within_the_pause_quarantines_nothing() {
    // A pause long enough that a 500 ms stall on a loaded machine stays
    // well inside it.
    const PAUSE_MS: u64 = 2000;
    let _turn = peer_process::alone().await;
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let events = record_events(&a.system);
        let peer = Peer::start(&PeerConfig::new(INTERVAL_MS, PAUSE_MS)).await;
        let (watcher, terminated) = spawn_watcher(&a.system);
        let calc: ActorRef<Calc> = a
            .remoting
            .spawn_remote(&peer.address, "calculator", Some("c"), &(), T)
            .await
            .unwrap();
        watcher.tell(WatcherMsg::Watch(calc.to_any()));
        assert_eq!(add(&calc, 1, 2).await, 3);
        let sink = by_path(&a, &peer.address, "sink");
        wait_until(T, "the peer's heartbeats", || {
            a.remoting.is_reachable(&peer.address) == Some(true)
        })
        .await;
        // Half a second of heartbeats for the detector's history, then a
        // stall of half a second: the scenario's timing.
        tokio::time::sleep(Duration::from_millis(500)).await;

        peer.signal("STOP");
        for n in 0..100 {
            sink.tell(Load::Small { n });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        peer.signal("CONT");
        let start = Instant::now();
        let mut suspected = 0;
        while start.elapsed() < Duration::from_secs(3) {
            suspected += u32::from(a.remoting.is_reachable(&peer.address) != Some(true));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(suspected, 0, "a stall within the pause was suspected");
        assert!(
            terminated.all().is_empty(),
            "Terminated: {:?}",
            terminated.values()
        );
        assert_eq!(trouble(&events, &peer.address), vec![]);
        assert_eq!(add(&calc, 2, 3).await, 5);
        assert_eq!(sink_report(&sink).await, vec![100, 0, 0]);
        a.system.terminate().await;
    })
    .await;
}

/// A million tells to a stalled peer fill its queue; the warnings (and
/// errors) of the whole process, about dropped tells, the unreachable node
/// and its quarantine alike, stay under 20 a second. (`drop_warnings.rs` counts the dropped-tell
/// warnings alone, against a raw socket that does not read.)
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_tells_to_a_stalled_peer_give_at_most_20_warnings_a_second() {
    let _turn = peer_process::alone().await;
    log_capture::install();
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let peer = Peer::start(&PeerConfig::new(INTERVAL_MS, PAUSE_MS)).await;
        let sink = by_path(&a, &peer.address, "sink");
        assert_eq!(sink_report(&sink).await, vec![0, 0, 0]);
        let warnings = || log_capture::events(|e| e.level <= Level::WARN).len();

        peer.signal("STOP");
        let before = warnings();
        let start = Instant::now();
        for n in 0..1_000_000 {
            sink.tell(Load::Small { n });
        }
        // Past the detector's verdict too, whose lines count as well.
        tokio::time::sleep(detection_bound(INTERVAL_MS, PAUSE_MS)).await;
        let seconds = start.elapsed().as_secs() + 1;
        let warned = (warnings() - before) as u64;
        assert!(
            a.system.dead_letter_count() > 0,
            "the queue never filled: nothing to warn about"
        );
        assert!(
            warned <= 20 * seconds,
            "{warned} warnings in {seconds} s: {:#?}",
            log_capture::events(|e| e.level <= Level::WARN)
                .iter()
                .skip(before)
                .take(40)
                .collect::<Vec<_>>()
        );
        drop(peer);
        a.system.terminate().await;
    })
    .await;
}

/// 10 MB messages streamed to the peer for three seconds while watching an
/// actor there: neither node ever judges the other unreachable, no
/// `Terminated` comes, and every message arrives. A heartbeat queued
/// behind the stream would wait longer than the pause.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_megabyte_messages_do_not_hold_heartbeats_back() {
    const BLOB: usize = 10 * 1000 * 1000;
    const PAUSE_MS: u64 = 1000;
    let _turn = peer_process::alone().await;
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let mut config = PeerConfig::new(INTERVAL_MS, PAUSE_MS);
        config.parent = Some(a.remoting.address().clone());
        let mut peer = Peer::start(&config).await;
        let (watcher, terminated) = spawn_watcher(&a.system);
        let calc: ActorRef<Calc> = a
            .remoting
            .spawn_remote(&peer.address, "calculator", Some("c"), &(), T)
            .await
            .unwrap();
        watcher.tell(WatcherMsg::Watch(calc.to_any()));
        assert_eq!(add(&calc, 1, 2).await, 3);
        let sink = by_path(&a, &peer.address, "sink");
        wait_until(T, "the peer's heartbeats", || {
            a.remoting.is_reachable(&peer.address) == Some(true)
        })
        .await;

        let watch = async {
            let start = Instant::now();
            let mut suspected = 0u32;
            while start.elapsed() < Duration::from_secs(3) {
                suspected += u32::from(a.remoting.is_reachable(&peer.address) != Some(true));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            suspected
        };
        let stream = async {
            let start = Instant::now();
            let mut sent = 0u64;
            while start.elapsed() < Duration::from_secs(3) {
                sink.send(Load::Big(Bulk(vec![7; BLOB]))).await.unwrap();
                sent += 1;
            }
            sent
        };
        let (suspected, sent) = tokio::join!(watch, stream);
        assert_eq!(suspected, 0, "the peer was suspected during the stream");
        assert!(sent >= 3, "only {sent} messages: no stream to speak of");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let report = peer.report().await;
            if report[1] == sent {
                break;
            }
            assert!(Instant::now() < deadline, "{} of {sent} arrived", report[1]);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        peer.command("unreachable");
        let peer_suspected: u64 = peer.line("UNREACHABLE ", T).await.parse().unwrap();
        assert_eq!(peer_suspected, 0, "the peer suspected us during the stream");
        assert!(
            terminated.all().is_empty(),
            "Terminated: {:?}",
            terminated.values()
        );
        a.system.terminate().await;
    })
    .await;
}
