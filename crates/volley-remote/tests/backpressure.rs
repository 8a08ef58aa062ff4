//! Back-pressure that parks: a `send().await` of a message for the large
//! lane waits for room on that lane, woken when it drains, instead of
//! retrying in a loop (`RemoteRoute::room` once watched the ordinary lane
//! only, so a full large lane made `send().await` spin a core).

mod common;
mod raw_peer;

use std::time::{Duration, Instant};

use common::{node, Calc, T};
use tokio::net::TcpListener;
use volley::{Actor, Context, HandleResult, Props, TellError};
use volley_remote::wire::Address;
use volley_remote::RemoteSettings;

/// Takes the replies nobody reads.
struct Sink;

impl Actor for Sink {
    type Msg = i64;

    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: i64) -> HandleResult {
        Ok(())
    }
}

/// CPU time this process has used (user + system), from /proc/self/stat.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the
    // name and state; in clock ticks, which are 1/100 s on Linux.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Runs on a runtime of its own, so that a send that spins (the bug this
/// guards against) fails the test instead of hanging it: the spinning task
/// never yields, and only `shutdown_timeout` gets past it.
#[test]
fn a_send_to_a_full_large_lane_parks_instead_of_spinning() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (a, x, sink, held, _) = rt.block_on(full_lane_to_a_stalled_peer(RemoteSettings::default()));
    let message = blob(&sink);
    let send = rt.spawn(async move { x.send(message).await.is_ok() });
    let before = cpu_time();
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_time() - before;
    let finished = send.is_finished();
    send.abort();
    rt.block_on(async {
        a.remoting.shutdown();
        a.system.terminate().await;
    });
    drop(held);
    rt.shutdown_timeout(Duration::from_secs(1));
    assert!(
        !finished,
        "the lane stayed full, so the send must still be waiting"
    );
    assert!(
        used < Duration::from_millis(300),
        "a parked send used {used:?} of CPU in 2 s"
    );
}

/// A node whose large lane to a peer that shook hands and never reads is
/// full: the node, its ref to an actor on the peer, a sink for replies,
/// the peer's sockets, and the peer's address.
async fn full_lane_to_a_stalled_peer(
    mut settings: RemoteSettings,
) -> (
    common::Node,
    volley::ActorRef<Calc>,
    volley::ActorRef<i64>,
    Vec<tokio::net::TcpStream>,
    Address,
) {
    settings.batching.max_pending_bytes = 64 * 1024;
    let a = node("alpha", settings).await;
    let sink = a.system.spawn("sink", Props::new(|| Sink)).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer: Address = format!("volley://peer@127.0.0.1:{port}").parse().unwrap();
    let x = a
        .remoting
        .resolve::<Calc>(&format!("{peer}/user/x"))
        .unwrap();
    x.tell(blob(&sink));
    // The peer answers the three handshakes and then never reads.
    let mut held = Vec::new();
    for _ in 0..3 {
        let (_, stream, _) = tokio::time::timeout(T, raw_peer::accept_as(&listener, &peer))
            .await
            .expect("all three lanes connect");
        held.push(stream);
    }
    // Fill the socket buffers, then the large lane; again after a pause,
    // since the kernel may take more once its buffers have grown, until
    // a refill finds the lane still full.
    let start = Instant::now();
    'fill: loop {
        let mut taken = 0;
        loop {
            match x.try_tell(blob(&sink)) {
                Err(TellError::Full(_)) => break,
                Ok(()) => {
                    taken += 1;
                    tokio::task::yield_now().await
                }
                // A short failure detector may give the peer up while the
                // lane fills on a loaded machine: the test goes on from
                // there (a test that expects parking then fails).
                Err(TellError::Terminated(_)) => break 'fill,
            }
            assert!(start.elapsed() < T, "the large lane never filled");
        }
        if taken == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (a, x, sink, held, peer)
}

/// The peer never sends a heartbeat either: the failure detector gives it
/// up, what is queued for it becomes dead letters, and the waiting send
/// fails instead of waiting for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_is_given_up_and_the_waiting_send_fails() {
    let settings = RemoteSettings {
        failure_detector: volley_remote::transport::FailureDetectorSettings {
            heartbeat_interval_ms: 50,
            acceptable_heartbeat_pause_ms: 400,
            ..Default::default()
        },
        ..RemoteSettings::default()
    };
    let (a, x, sink, held, peer) = full_lane_to_a_stalled_peer(settings).await;
    let dead_before = a.system.dead_letter_count();
    let started = Instant::now();
    // Sends park while the lane is full; the kernel may still take a
    // little now and then, letting one through. Once the peer is given up,
    // a send fails instead of waiting.
    let sent: Result<(), _> = tokio::time::timeout(T, async {
        loop {
            if let Err(refused) = x.send(blob(&sink)).await {
                break Err(refused);
            }
        }
    })
    .await
    .expect("a send fails once the peer is given up");
    assert!(
        matches!(sent, Err(TellError::Terminated(_))),
        "{:?}",
        sent.map_err(|e| e.to_string())
    );
    assert_eq!(a.remoting.is_reachable(&peer), Some(false));
    assert!(
        a.system.dead_letter_count() > dead_before,
        "the queued frames are counted as dead letters"
    );
    // Generous: heartbeat interval + pause, plus the monitor's tick and a
    // loaded machine's slack.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(held);
    a.system.terminate().await;
}

fn blob(reply_to: &volley::ActorRef<i64>) -> Calc {
    Calc::Blob(vec![7; 128 * 1024], reply_to.clone())
}
