//! `SystemMessageDeliverySpec` ("be resent when some in the middle are
//! lost", "be resent when first is lost"), at the level of two nodes: a
//! TCP relay in front of one node throws away what the other writes, so a
//! watch is lost with its connection, and must be sent again on the next
//! one. The rest of the Artery cases, and the ones skipped, are listed in
//! `pekko_artery.rs`.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{add, free_port, node, remote_ref, spawn_calculator, Calc, T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use volley::{ActorRef, ToAnyRef};
use volley_remote::RemoteSettings;

async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Asks `calc` with short timeouts until one answer comes, within [`T`].
async fn until_answered(calc: &ActorRef<Calc>) {
    let start = Instant::now();
    while common::ask_sum(calc, Duration::from_millis(500))
        .await
        .is_err()
    {
        assert!(start.elapsed() < T, "no answer from {}", calc.path());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reconnects from 50 ms on; the default failure detector.
fn quick_retry() -> RemoteSettings {
    RemoteSettings {
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        ..RemoteSettings::default()
    }
}

/// A TCP relay in front of a node's listener: bytes from the dialing side
/// can be thrown away instead of passed on, and every relayed connection
/// cut at once.
struct Proxy {
    port: u16,
    discard: Arc<AtomicBool>,
    discarded: Arc<AtomicU64>,
    links: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: tokio::task::JoinHandle<()>,
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    drop_when: Option<(Arc<AtomicBool>, Arc<AtomicU64>)>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some((discard, discarded)) = &drop_when {
            if discard.load(Ordering::SeqCst) {
                discarded.fetch_add(n as u64, Ordering::SeqCst);
                continue;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    async fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let discard = Arc::new(AtomicBool::new(false));
        let discarded = Arc::new(AtomicU64::new(0));
        let links = Arc::new(Mutex::new(Vec::new()));
        let (d, dd, l) = (discard.clone(), discarded.clone(), links.clone());
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (in_r, in_w) = inbound.into_split();
                let (out_r, out_w) = outbound.into_split();
                let mut links = l.lock().unwrap();
                links.push(tokio::spawn(pump(
                    in_r,
                    out_w,
                    Some((d.clone(), dd.clone())),
                )));
                links.push(tokio::spawn(pump(out_r, in_w, None)));
            }
        });
        Proxy {
            port,
            discard,
            discarded,
            links,
            accept,
        }
    }

    /// Closes every relayed connection (both sides see it end).
    fn cut(&self) {
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_lost_with_its_connection_is_sent_again() {
    let b_port = free_port();
    let proxy = Proxy::start(b_port).await;
    let a = node("lossy-a", quick_retry()).await;
    // B listens on b_port and tells others to dial the proxy.
    let b = node(
        "lossy-b",
        RemoteSettings {
            port: b_port,
            canonical_port: Some(proxy.port),
            ..quick_retry()
        },
    )
    .await;
    let calc = spawn_calculator(&b, "echo");
    let remote = remote_ref(&a, &b, "echo");
    assert_eq!(add(&remote, 1, 2).await, 3);

    // From now on what A writes towards B is lost on the way.
    let before = proxy.discarded.load(Ordering::SeqCst);
    proxy.discard.store(true, Ordering::SeqCst);
    let (watcher, terminated) = common::spawn_counting_watcher(&a.system, "watcher");
    watcher.tell(remote.to_any_ref());
    wait_until(T, "the watch to be written and lost", || {
        proxy.discarded.load(Ordering::SeqCst) > before
    })
    .await;
    // The connections fail; A dials again through the proxy, which passes
    // everything on once more.
    proxy.discard.store(false, Ordering::SeqCst);
    proxy.cut();
    // An ask written before A's lane saw its connection end is lost with
    // it (at most once), so ask until one is answered.
    until_answered(&remote).await;

    calc.graceful_stop();
    wait_until(T, "Terminated", || terminated.load(Ordering::SeqCst) > 0).await;
    // A window for a duplicate to arrive (what is checked).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(terminated.load(Ordering::SeqCst), 1, "exactly once");
    a.system.terminate().await;
    b.system.terminate().await;
}
