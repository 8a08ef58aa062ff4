//! A peer that restarts again and again leaves nothing behind in its
//! watcher's ref tables: once an incarnation is gone, the refs to its
//! actors that the watcher's lanes declared are dropped, on every lane,
//! and no new connection declares them again.
//!
//! The peer runs in a second process (`peer_process`), so that this
//! process's resident memory is the watcher's alone. Each round the
//! watcher spawns 50 actors on the peer's new incarnation, watches them
//! (control lane), asks each (ordinary lane) and sends some a large
//! message (large lane); then the peer goes, in turns: it leaves with a
//! goodbye, it is killed and restarted at once (its next incarnation's
//! handshake tells it is gone), or it is killed and quarantined by the
//! watcher's detector before it comes back.

mod common;
use volley_testkit::log_capture;
mod peer_process;
mod raw_peer;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{add, eventually, free_port, Calc, Node, T};
use peer_process::{
    associated, detector, local_node, record_events, remote_settings, Peer, PeerConfig, Seen,
};
use volley::{Actor, ActorRef, AnyRef, Context, HandleResult, Props};
use volley_remote::wire::Address;
use volley_remote::RemotingEvent;

const WATCHED: usize = 50;
/// How many of them get a large message (the large lane's refs).
const LARGE: usize = 10;
const MIB: usize = 1024 * 1024;
const INTERVAL_MS: u64 = 100;
/// Patient enough that a loaded machine's pauses are not taken for a
/// crash of the live peer.
const PAUSE_MS: u64 = 1500;

/// The peer's side: see `peer_process`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the peer process of the other tests; runs only when they start it"]
async fn peer_process() {
    peer_process::run_peer().await;
}

/// Counts the answers to `Calc::Blob` (a peer's hello, -1, is not one).
struct Replies(Arc<AtomicUsize>);

impl Actor for Replies {
    type Msg = i64;
    fn handle(&mut self, _ctx: &mut Context<Self>, len: i64) -> HandleResult {
        if len >= 0 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// How an incarnation of the peer ends.
#[derive(Clone, Copy, Debug)]
enum End {
    /// It leaves with a goodbye.
    Leave,
    /// Killed, and started again at once.
    Restart,
    /// Killed, and quarantined by the watcher before it starts again.
    Quarantine,
}

/// The watcher and what it counts.
struct Watching {
    a: Node,
    watcher: ActorRef<AnyRef>,
    terminated: Arc<AtomicUsize>,
    replies: ActorRef<i64>,
    answered: Arc<AtomicUsize>,
    events: Seen<RemotingEvent>,
}

impl Watching {
    async fn new() -> Self {
        let settings = remote_settings(0, &detector(INTERVAL_MS, PAUSE_MS));
        let a = local_node("watcher", settings, &[]).await;
        let (watcher, terminated) = common::spawn_counting_watcher(&a.system, "watcher");
        let answered = Arc::new(AtomicUsize::new(0));
        let n = answered.clone();
        let replies = a
            .system
            .spawn("replies", Props::new(move || Replies(n.clone())))
            .unwrap();
        Watching {
            events: record_events(&a.system),
            a,
            watcher,
            terminated,
            replies,
            answered,
        }
    }

    /// A new incarnation of the peer on `port`, once the watcher has
    /// associated with it: the peer dials in (a node that left is talked
    /// to again only then).
    async fn peer(&self, port: u16) -> Peer {
        let config = PeerConfig {
            port,
            ..PeerConfig::new(INTERVAL_MS, PAUSE_MS)
        };
        let mut peer = Peer::start(&config).await;
        peer.command(&format!("hello {}/user/replies", self.a.remoting.address()));
        associated(&self.events, &peer.address, peer.uid).await;
        peer
    }

    /// On one incarnation of the peer: 50 actors spawned there, watched
    /// and asked, 10 of them sent a large message. Returns how many refs
    /// the watcher's lanes to the peer hold then.
    async fn round(&self, peer: &Address, round: usize) -> usize {
        let spawns: Vec<_> = (0..WATCHED)
            .map(|i| {
                let (remoting, peer) = (self.a.remoting.clone(), peer.clone());
                tokio::spawn(async move {
                    let name = format!("w{i}");
                    let spawned = remoting.spawn_remote(&peer, "calculator", Some(&name), &(), T);
                    let w: ActorRef<Calc> = spawned
                        .await
                        .unwrap_or_else(|e| panic!("spawning {name}: {e}"));
                    assert_eq!(add(&w, i as i64, 1).await, i as i64 + 1);
                    w
                })
            })
            .collect();
        for (i, spawned) in spawns.into_iter().enumerate() {
            let w = spawned.await.unwrap();
            self.watcher.tell(w.to_any());
            if i < LARGE {
                w.tell(Calc::Blob(vec![0; 80 * 1024], self.replies.clone()));
            }
        }
        let answered = (round + 1) * LARGE;
        eventually("the large messages' answers", || {
            self.answered.load(Ordering::SeqCst) >= answered
        })
        .await;
        self.a.remoting.exported_refs(peer).unwrap()
    }

    /// Ends the peer's incarnation as `end` says; returns its next one,
    /// once every actor watched in the first `rounds` rounds is reported
    /// terminated.
    async fn next(&self, mut peer: Peer, end: End, port: u16, rounds: usize) -> Peer {
        let gone = peer.uid;
        match end {
            End::Leave => peer.quit().await,
            End::Restart => peer.kill(),
            End::Quarantine => {
                peer.kill();
                let quarantined = |e: &RemotingEvent| matches!(e, RemotingEvent::Quarantined { uid, .. } if *uid == gone);
                // Not a test of the detector's timing: a generous bound.
                peer_process::wait_until(2 * T, "the killed peer's quarantine", || {
                    self.events.values().iter().any(quarantined)
                })
                .await;
            }
        }
        let next = self.peer(port).await;
        eventually("a Terminated per watched actor", || {
            self.terminated.load(Ordering::SeqCst) >= rounds * WATCHED
        })
        .await;
        next
    }
}

/// Rounds of restarts: the refs the watcher's lanes hold to the peer stay
/// flat (with the refs of gone incarnations kept, they grew by one per
/// watched actor and lane each round). Returns the watcher's resident
/// memory after the 10th round and after the last.
async fn restarts(rounds: usize) -> (usize, usize) {
    let w = Watching::new().await;
    let port = free_port();
    let mut peer = w.peer(port).await;
    let address = peer.address.clone();
    let ends = [End::Leave, End::Restart, End::Quarantine];
    let mut held = Vec::new();
    let mut rss_at_10 = 0;
    for round in 0..rounds {
        held.push(w.round(&address, round).await);
        peer = w
            .next(peer, ends[round % ends.len()], port, round + 1)
            .await;
        if round == 9 {
            rss_at_10 = raw_peer::rss_bytes();
        }
    }
    let first = held[1];
    assert!(
        held.iter().all(|&h| h <= first),
        "the watcher's lanes to the peer held, round by round: {held:?}"
    );
    assert!(first < 4 * WATCHED, "{held:?}");
    // No actor of the last incarnation was watched: the lanes hold only
    // the watcher's own refs.
    let after = w.a.remoting.exported_refs(&address).unwrap_or(0);
    assert!(after < WATCHED, "{after} refs held after the last round");
    let rss = raw_peer::rss_bytes();
    peer.quit().await;
    w.a.system.terminate().await;
    (rss_at_10, rss)
}

/// A watch through a ref to an actor of a gone incarnation, made once the
/// next incarnation is up, ends at once with `Terminated`; nothing is
/// sent, so no lane declares the ref again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_watch_of_a_gone_incarnations_actor_ends_at_once_and_declares_nothing() {
    let w = Watching::new().await;
    let port = free_port();
    let peer = w.peer(port).await;
    let address = peer.address.clone();
    let spawned =
        w.a.remoting
            .spawn_remote(&address, "calculator", Some("old"), &(), T);
    let old: ActorRef<Calc> = spawned.await.unwrap();
    assert_eq!(add(&old, 1, 2).await, 3);
    let peer = w.next(peer, End::Restart, port, 0).await;
    let held = w.a.remoting.exported_refs(&address).unwrap();
    w.watcher.tell(old.to_any());
    eventually("the late watch's Terminated", || {
        w.terminated.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(
        w.a.remoting.exported_refs(&address).unwrap(),
        held,
        "the watch declared the gone actor again"
    );
    peer.quit().await;
    w.a.system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_to_actors_of_gone_incarnations_are_dropped_on_every_lane() {
    restarts(15).await;
}

/// The soak: 100 restarts, and the watcher's resident memory
/// stays within 4 MiB of what it was after the 10th.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a soak of 100 restarts; run it with --ignored"]
async fn a_hundred_restarts_leave_the_watchers_memory_flat() {
    let (at_10, at_100) = restarts(100).await;
    eprintln!(
        "resident after round 10: {} KiB, after round 100: {} KiB",
        at_10 / 1024,
        at_100 / 1024
    );
    assert!(
        at_100 <= at_10 + 4 * MIB,
        "resident memory grew from {at_10} to {at_100} bytes"
    );
}
