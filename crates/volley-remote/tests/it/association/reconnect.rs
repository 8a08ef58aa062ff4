//! Reconnecting: a peer that restarts on the same port gets what was
//! queued for it while it was away, with the refs inside re-declared; what
//! does not fit the lane's bound is counted as a dead letter at the sender;
//! and a peer that keeps failing is retried with a growing pause.

use crate::common;
use crate::log_capture;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{registry, Calc, Node};
use tokio::io::AsyncReadExt;
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Settings};
use volley_remote::wire::{Lane, Preamble, PREAMBLE_LEN};
use volley_remote::{RemoteSettings, Remoting};

/// Larger than the default `large_message_threshold` (64 KiB): the large lane.
const LARGE: usize = 100 * 1024;
const SMALL: usize = 16;

/// Counts the calculator's answers to `Calc::Blob`, which it sends to the
/// ref inside each message: an answer proves the message arrived and its
/// ref resolved.
struct Counter(Arc<AtomicU64>);

impl Actor for Counter {
    type Msg = i64;
    fn handle(&mut self, _ctx: &mut Context<Self>, _len: i64) -> HandleResult {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A node whose `/user/calc` exists before it listens, so nothing that
/// arrives finds it missing.
/// A `Counter` on `system`, and the count it keeps.
fn spawn_counter(system: &ActorSystem) -> (ActorRef<i64>, Arc<AtomicU64>) {
    let replies = Arc::new(AtomicU64::new(0));
    let counted = replies.clone();
    let counter = system
        .spawn("counter", Props::new(move || Counter(counted.clone())))
        .unwrap();
    (counter, replies)
}

async fn node_with_calc(name: &str, remote: RemoteSettings) -> Node {
    let settings = Settings {
        io_threads: 2,
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(name, settings).unwrap();
    system
        .spawn("calc", Props::new(common::Calculator::default))
        .unwrap();
    let remoting = Remoting::start_with(&system, registry(), remote)
        .await
        .unwrap();
    Node { system, remoting }
}

/// A sender with a short back-off, so that a test waits little for the
/// reconnect.
fn quick_retry() -> RemoteSettings {
    RemoteSettings {
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(400),
        ..RemoteSettings::default()
    }
}

fn on_port(port: u16) -> RemoteSettings {
    RemoteSettings {
        port,
        ..RemoteSettings::default()
    }
}

/// Sends `small` small and `large` large blobs, each carrying `reply_to`.
fn send_blobs(calc: &ActorRef<Calc>, reply_to: &ActorRef<i64>, small: u64, large: u64) -> u64 {
    for _ in 0..small {
        calc.tell(Calc::Blob(vec![1; SMALL], reply_to.clone()));
    }
    for _ in 0..large {
        calc.tell(Calc::Blob(vec![2; LARGE], reply_to.clone()));
    }
    small + large
}

/// Waits until `done` holds, for at most `limit`.
async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_queued_while_the_peer_restarts_reach_its_new_incarnation() {
    log_capture::install();
    let a = common::node("alpha", quick_retry()).await;
    // A port below the ephemeral range: B restarts on it, and A's
    // reconnecting lanes could take an ephemeral one as their own meanwhile.
    let b = node_with_calc(
        "beta",
        RemoteSettings {
            port: common::free_port(),
            ..RemoteSettings::default()
        },
    )
    .await;
    let port = b.remoting.address().port();
    let (counter, replies) = spawn_counter(&a.system);
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("{}/user/calc", b.remoting.address()))
        .unwrap();

    // Phase 1: B is up; everything arrives before it goes away.
    let mut sent = send_blobs(&calc, &counter, 500, 5);
    wait_until(Duration::from_secs(20), "B's answers", || {
        replies.load(Ordering::Relaxed) == sent
    })
    .await;

    // B goes away. A's lanes see the close before anything more is sent, so
    // nothing goes into a socket whose peer is gone.
    b.remoting.shutdown();
    b.system.terminate().await;
    let remote = format!("remote={}", b.remoting.address());
    wait_until(Duration::from_secs(10), "A to notice B's close", || {
        let lost = log_capture::events(|e| {
            e.text.starts_with("connection lost") && e.text.contains(&remote)
        });
        ["lane=Ordinary", "lane=Large"]
            .iter()
            .all(|lane| lost.iter().any(|e| e.text.contains(lane)))
    })
    .await;

    // Phase 2: B is away; what is sent waits in A's lanes (within their bound)
    // while they fail to connect.
    let failed_attempts = |lane: &str| {
        log_capture::events(|e| {
            e.text.starts_with("cannot connect")
                && e.text.contains(&remote)
                && e.text.contains(lane)
        })
        .len()
    };
    let failed_before = ["lane=Ordinary", "lane=Large"].map(failed_attempts);
    sent += send_blobs(&calc, &counter, 2000, 10);
    volley_testkit::await_cond("a failed attempt on each user lane", || {
        ["lane=Ordinary", "lane=Large"]
            .map(failed_attempts)
            .iter()
            .zip(failed_before)
            .all(|(now, before)| *now > before)
    });
    assert_eq!(
        a.system.dead_letter_count(),
        0,
        "failed connection attempts drop nothing"
    );

    // Phase 3: B' on the same port gets the queue, then new messages.
    let b2 = node_with_calc("beta", on_port(port)).await;
    sent += send_blobs(&calc, &counter, 500, 5);
    wait_until(Duration::from_secs(30), "every message answered", || {
        replies.load(Ordering::Relaxed) + a.system.dead_letter_count() == sent
    })
    .await;
    assert_eq!(
        a.system.dead_letter_count(),
        0,
        "nothing was over the bound, so everything arrived"
    );
    assert_eq!(replies.load(Ordering::Relaxed), sent);
    assert_eq!(b2.system.dead_letter_count(), 0, "every ref resolved on B'");
    a.system.terminate().await;
    b2.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_tells_are_counted_and_a_waiting_send_completes_once_the_peer_is_up() {
    // A port nobody listens on yet.
    let port = common::free_port();
    let a = common::node("alpha", quick_retry()).await;
    let (counter, replies) = spawn_counter(&a.system);
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("volley://beta@127.0.0.1:{port}/user/calc"))
        .unwrap();
    // Some 35-byte frames each: more than the 4 MiB bound holds.
    let mut sent = send_blobs(&calc, &counter, 200_000, 0);
    let dropped = a.system.dead_letter_count();
    assert!(
        dropped > 0 && dropped < sent,
        "{dropped} of {sent} tells over the bound"
    );
    let waiting = {
        let calc = calc.clone();
        let reply_to = counter.clone();
        tokio::spawn(async move {
            calc.send(Calc::Blob(vec![3; SMALL], reply_to))
                .await
                .unwrap()
        })
    };
    sent += 1;
    // Nothing can make room while nobody listens: a window for the send to
    // end wrongly (what is checked).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "send().await waits for room");

    let b = node_with_calc("beta", on_port(port)).await;
    tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiting send completes once the queue drains")
        .unwrap();
    wait_until(
        Duration::from_secs(30),
        "answers and drops to add up",
        || replies.load(Ordering::Relaxed) + a.system.dead_letter_count() == sent,
    )
    .await;
    assert_eq!(
        a.system.dead_letter_count(),
        dropped,
        "only tells over the bound were dropped"
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

// One dispatcher kind: what this checks is the transport's timing (its
// connection attempts and timers), which no actor's scheduling touches,
// and it waits seconds of real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_keeps_failing_is_retried_with_a_growing_pause() {
    // Accepts, learns the lane from the preamble, and closes.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let attempts = Arc::new(std::sync::Mutex::new(HashMap::<Lane, u32>::new()));
    let counting = attempts.clone();
    let acceptor = tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut preamble = [0u8; PREAMBLE_LEN];
            let read =
                tokio::time::timeout(Duration::from_secs(1), stream.read_exact(&mut preamble))
                    .await;
            if let Ok(Ok(_)) = read {
                if let Ok(Some(p)) = Preamble::decode(&preamble) {
                    *counting.lock().unwrap().entry(p.lane).or_default() += 1;
                }
            }
        }
    });
    let a = common::node("alpha", RemoteSettings::default()).await;
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("volley://beta@127.0.0.1:{port}/user/calc"))
        .unwrap();
    calc.tell(Calc::Seq { from: 0, n: 0 });
    tokio::time::sleep(Duration::from_secs(5)).await;
    acceptor.abort();
    let attempts = attempts.lock().unwrap().clone();
    for lane in Lane::ALL {
        let n = attempts.get(&lane).copied().unwrap_or(0);
        // 200 ms doubling: attempts near 0, 0.2, 0.6, 1.4 and 3 s.
        assert!((2..=10).contains(&n), "{n} attempts on {lane:?} in 5 s");
    }
    assert_eq!(
        a.system.dead_letter_count(),
        0,
        "the queued message waits through failed attempts"
    );
    a.system.terminate().await;
}
