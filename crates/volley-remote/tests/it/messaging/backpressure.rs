//! Back-pressure that parks: a `send().await` of a message for the large
//! lane waits for room on that lane, woken when it drains, instead of
//! retrying in a loop (`RemoteRoute::room` once watched the ordinary lane
//! only, so a full large lane made `send().await` spin a core).

use crate::common;
use crate::raw_peer;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{node, Calc, T};
use tokio::io::AsyncReadExt;
use volley::TellError;
use volley_remote::wire::{Address, PduKind};
use volley_remote::RemoteSettings;
use volley_testkit::actor_fn;

/// CPU time (user + system) the threads named `name` have used, from
/// /proc: the test's own runtime, not the other test running meanwhile.
fn cpu_time(name: &str) -> Duration {
    let mut ticks = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue; // the thread ended meanwhile
        };
        let open = stat.find('(').unwrap();
        let close = stat.rfind(')').unwrap();
        if &stat[open + 1..close] != name {
            continue;
        }
        // utime and stime: fields 14 and 15 of the line, 12 and 13 after
        // the name and state; in clock ticks, which are 1/100 s on Linux.
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        ticks += fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    }
    Duration::from_millis(ticks * 10)
}

/// Runs on a runtime of its own, so that a send that spins (the bug this
/// guards against) fails the test instead of hanging it: the spinning task
/// never yields, and only `shutdown_timeout` gets past it.
#[volley_testkit::each_dispatcher]
#[test]
fn a_send_to_a_full_large_lane_parks_instead_of_spinning() {
    const RUNTIME: &str = "parked-sender";
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(RUNTIME)
        .enable_all()
        .build()
        .unwrap();
    // The peer never sends a heartbeat: a detector patient enough that a
    // slow fill on a loaded machine does not give the peer up mid-test
    // (that ends the wait with an error, which is the other test's case).
    let settings = RemoteSettings {
        failure_detector: volley_remote::transport::FailureDetectorSettings {
            acceptable_heartbeat_pause: Duration::from_millis(600_000),
            ..Default::default()
        },
        ..RemoteSettings::default()
    };
    let StalledPeer {
        node: a,
        x,
        sink,
        held,
        ..
    } = rt.block_on(full_lane_to_a_stalled_peer(settings));
    // Sends in a loop: should the kernel find a little room now and then,
    // one more send goes through and the next one parks again. The task
    // ends only when a send fails, and a parked one uses no CPU; a send
    // that goes through costs its encoding (128 KiB, a debug build), so
    // those are counted.
    let completed = Arc::new(AtomicUsize::new(0));
    let counted = completed.clone();
    let send = rt.spawn(async move {
        loop {
            if let Err(refused) = x.send(blob(&sink)).await {
                break refused.to_string();
            }
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    let before = cpu_time(RUNTIME);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_time(RUNTIME) - before;
    let finished = send.is_finished();
    let outcome = if finished {
        rt.block_on(send).unwrap_or_else(|e| e.to_string())
    } else {
        send.abort();
        String::new()
    };
    rt.block_on(async {
        a.remoting.shutdown();
        a.system.terminate().await;
    });
    drop(held);
    rt.shutdown_timeout(Duration::from_secs(1));
    assert!(
        !finished,
        "the lane stayed full, so the send must still be waiting; it failed: {outcome}"
    );
    // A send that spins holds a core: about 2 s of CPU here. Parked, the
    // task uses next to nothing beyond the sends that went through.
    let completed = completed.load(Ordering::Relaxed) as u32;
    let allowed = (Duration::from_millis(300) + Duration::from_millis(100) * completed)
        .min(Duration::from_millis(1200));
    assert!(
        used < allowed,
        "a parked send used {used:?} of CPU in 2 s ({completed} sends went through meanwhile)"
    );
}

/// A node whose large lane to a peer that shook hands and never reads is
/// full.
struct StalledPeer {
    node: common::Node,
    /// The node's ref to an actor on the peer.
    x: volley::ActorRef<Calc>,
    /// Takes the replies nobody sends.
    sink: volley::ActorRef<i64>,
    /// The peer's end of each lane, with what it received after the
    /// handshake and has not read yet.
    held: Vec<(tokio::net::TcpStream, bytes::BytesMut)>,
    address: Address,
    /// Messages the node took for the peer (told, or `try_tell` that
    /// returned `Ok`).
    taken: usize,
}

async fn full_lane_to_a_stalled_peer(mut settings: RemoteSettings) -> StalledPeer {
    settings.batching.max_pending_bytes = 64 * 1024;
    let a = node("alpha", settings).await;
    let sink = a
        .system
        .spawn("sink", actor_fn(|_ctx, _reply: i64| Ok(())))
        .unwrap();
    // A small receive buffer on the peer's sockets: the kernel takes
    // little before the lane backs up, and stops taking more soon, so
    // the fill below settles before the failure detector (short in one
    // test) gives the peer up, even on a loaded machine.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(16).unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer: Address = format!("volley://peer@127.0.0.1:{port}").parse().unwrap();
    let x = a
        .remoting
        .resolve::<Calc>(&format!("{peer}/user/x"))
        .unwrap();
    x.tell(blob(&sink));
    let mut total = 1;
    // The peer answers the three handshakes and then never reads.
    let mut held = Vec::new();
    for _ in 0..3 {
        let (_, stream, rest) = tokio::time::timeout(T, raw_peer::accept_as(&listener, &peer))
            .await
            .expect("all three lanes connect");
        held.push((stream, rest));
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
                    total += 1;
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
        // The writer moves what it can into the socket meanwhile; the lane
        // counts as full once a round after such a pause takes nothing.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    StalledPeer {
        node: a,
        x,
        sink,
        held,
        address: peer,
        taken: total,
    }
}

/// How many whole user-message frames `received` holds (what the node
/// wrote completely; a frame cut off by the close is not delivered).
fn user_messages(received: &[u8]) -> usize {
    let mut at = 0;
    let mut count = 0;
    while at + 5 <= received.len() {
        let len = u32::from_le_bytes(received[at..at + 4].try_into().unwrap()) as usize;
        if at + 4 + len > received.len() {
            break;
        }
        count += usize::from(received[at + 4] == PduKind::UserMessage as u8);
        at += 4 + len;
    }
    count
}

/// The peer never sends a heartbeat either: the failure detector gives it
/// up, what is queued for it becomes dead letters, and the waiting send
/// fails instead of waiting for ever.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_is_given_up_and_the_waiting_send_fails() {
    let settings = RemoteSettings {
        failure_detector: volley_remote::transport::FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(50),
            acceptable_heartbeat_pause: Duration::from_millis(400),
            ..Default::default()
        },
        // A node that never heartbeats is given the longest reconnect
        // pause on top of the acceptable one: keep it short.
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        ..RemoteSettings::default()
    };
    let StalledPeer {
        node: a,
        x,
        sink,
        mut held,
        address: peer,
        mut taken,
    } = full_lane_to_a_stalled_peer(settings).await;
    let started = Instant::now();
    // Sends park while the lane is full; the kernel may still take a
    // little now and then, letting one through. Once the peer is given up,
    // a send fails instead of waiting.
    let sent: Result<(), _> = tokio::time::timeout(T, async {
        loop {
            match x.send(blob(&sink)).await {
                Ok(()) => taken += 1,
                Err(refused) => break Err(refused),
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
    // Generous: heartbeat interval + pause, plus the monitor's tick and a
    // loaded machine's slack.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Nothing taken is lost silently: each message the node took either
    // reached the peer's socket whole or is a dead letter (nothing else
    // dies on this node). The node closes its connections when it gives
    // the peer up; the kernel still hands over what it had been given.
    let mut received = 0;
    for (stream, buf) in &mut held {
        tokio::time::timeout(T, async {
            while stream.read_buf(buf).await.unwrap_or(0) > 0 {}
        })
        .await
        .expect("the node closes its connections to a peer it gave up");
        received += user_messages(buf);
    }
    // The writer task counts the frames it had taken when it sees the
    // reset, which may come a moment after the send failed.
    let accounted = tokio::time::timeout(T, async {
        while received + (a.system.dead_letter_count() as usize) < taken {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let dead = a.system.dead_letter_count() as usize;
    assert!(
        accounted.is_ok() && received + dead == taken,
        "{taken} messages taken, {received} received whole by the peer, {dead} dead letters"
    );
    a.system.terminate().await;
}

fn blob(reply_to: &volley::ActorRef<i64>) -> Calc {
    Calc::Blob(vec![7; 128 * 1024], reply_to.clone())
}
