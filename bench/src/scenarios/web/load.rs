//! The load half of `web`, run as `volley-bench web-load MODE PORT
//! CLIENTS WARMUP_MS MEASURE_MS SERVER_PID` in a process of its own (on
//! its own CPU when there are two): `ws` and `lp` ask the counter in a
//! closed loop per client; `push` opens idle sessions (measuring the
//! server's memory per session), subscribes them to the feed and has the
//! pusher publish to them in bursts. Prints one [`LoadResult`] JSON line.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::lp_client::LpClient;
use super::servers::{COUNTER, FEED, PUSHER};
use super::ws_client::WsClient;

/// The hidden subcommand's name.
pub const LOAD_COMMAND: &str = "web-load";

/// What one load run measured; the driver makes a row of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// Asks answered, or push messages delivered, in the measured window.
    pub done: u64,
    pub elapsed_ns: u64,
    /// Ask latency; absent for `push`.
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    /// `push`: the growth of the server's VmRSS per idle session.
    pub bytes_per_session: Option<f64>,
}

/// The message every ask sends the counter.
const ADD_ONE: &str = r#"{"add":1}"#;
/// Messages per push burst; each burst is delivered to every client
/// before the next starts, well within the session queue bound.
const BURST: u64 = 100;
/// How many connections are opened at once.
const CONNECTING: usize = 50;

pub fn serve(args: &[String]) -> crate::Result<()> {
    let [mode, port, clients, warmup_ms, measure_ms, server_pid] = args else {
        return Err("usage: web-load MODE PORT CLIENTS WARMUP_MS MEASURE_MS SERVER_PID".into());
    };
    let port: u16 = port.parse()?;
    let clients: usize = clients.parse()?;
    let warmup = Duration::from_millis(warmup_ms.parse()?);
    let measure = Duration::from_millis(measure_ms.parse()?);
    let server_pid: u32 = server_pid.parse()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let result = local.block_on(&rt, async move {
        match mode.as_str() {
            "ws" | "lp" => asks(mode == "lp", port, clients, warmup, measure).await,
            "push" => push(port, clients, warmup, measure, server_pid).await,
            other => Err(format!("unknown mode {other:?}").into()),
        }
    })?;
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}

/// A client of either transport.
enum Client {
    Ws(Box<WsClient>),
    Lp(LpClient),
}

impl Client {
    async fn ask(&mut self) -> crate::Result<()> {
        match self {
            Client::Ws(c) => c.ask(COUNTER, ADD_ONE).await,
            Client::Lp(c) => c.ask(COUNTER, ADD_ONE).await,
        }
    }
}

/// `clients` closed loops of asks: a warm-up, then the measured window.
async fn asks(
    long_poll: bool,
    port: u16,
    clients: usize,
    warmup: Duration,
    measure: Duration,
) -> crate::Result<LoadResult> {
    let mut connected = Vec::with_capacity(clients);
    for _ in 0..clients {
        connected.push(if long_poll {
            Client::Lp(LpClient::connect(port).await?)
        } else {
            Client::Ws(Box::new(WsClient::connect(port).await?))
        });
    }
    let start = Instant::now() + warmup;
    let end = start + measure;
    let loops: Vec<_> = connected
        .into_iter()
        .map(|client| tokio::task::spawn_local(ask_loop(client, start, end)))
        .collect();
    let mut all = Histogram::<u64>::new(3)?;
    for handle in loops {
        all.add(handle.await??)?;
    }
    Ok(LoadResult {
        done: all.len(),
        elapsed_ns: measure.as_nanos() as u64,
        p50_ns: Some(all.value_at_quantile(0.5)),
        p99_ns: Some(all.value_at_quantile(0.99)),
        bytes_per_session: None,
    })
}

/// Asks until `end`; the latencies of the asks sent from `start` on.
async fn ask_loop(
    mut client: Client,
    start: Instant,
    end: Instant,
) -> crate::Result<Histogram<u64>> {
    let mut latencies = Histogram::<u64>::new(3)?;
    loop {
        let sent = Instant::now();
        if sent >= end {
            return Ok(latencies);
        }
        client.ask().await?;
        if sent >= start {
            latencies.record(sent.elapsed().as_nanos() as u64)?;
        }
    }
}

/// The server's resident memory (VmRSS), in bytes.
pub fn rss_bytes(pid: u32) -> crate::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    vm_rss(&status).ok_or_else(|| format!("no VmRSS in /proc/{pid}/status").into())
}

/// VmRSS of `/proc/PID/status` text, in bytes.
pub fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `clients` idle sessions (memory), then bursts pushed to all of them.
async fn push(
    port: u16,
    clients: usize,
    warmup: Duration,
    measure: Duration,
    server_pid: u32,
) -> crate::Result<LoadResult> {
    let mut driver = WsClient::connect(port).await?;
    // One ask first, so that the server's one-off allocations are made.
    driver.ask(COUNTER, ADD_ONE).await?;
    let before = rss_bytes(server_pid)?;
    let sessions = open_sessions(port, clients).await?;
    // Let the server finish what the connections started.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_bytes(server_pid)?;
    let bytes_per_session = after.saturating_sub(before) as f64 / clients as f64;
    let received = Rc::new(Cell::new(0u64));
    let subscribed = Rc::new(Cell::new(0usize));
    for mut session in sessions {
        session.sub(FEED).await?;
        let (received, subscribed) = (received.clone(), subscribed.clone());
        tokio::task::spawn_local(async move {
            if session.next_pub().await.is_ok() {
                subscribed.set(subscribed.get() + 1);
            }
            while session.next_pub().await.is_ok() {
                received.set(received.get() + 1);
            }
        });
    }
    all_subscribed(&mut driver, &subscribed, clients).await?;
    // Warm-up: bursts until `warmup`.
    let warm_end = Instant::now() + warmup;
    while Instant::now() < warm_end {
        burst(&mut driver, &received, clients).await?;
    }
    let from = received.get();
    let start = Instant::now();
    while start.elapsed() < measure {
        burst(&mut driver, &received, clients).await?;
    }
    Ok(LoadResult {
        done: received.get() - from,
        elapsed_ns: start.elapsed().as_nanos() as u64,
        p50_ns: None,
        p99_ns: None,
        bytes_per_session: Some(bytes_per_session),
    })
}

/// Publishes single messages until every client has had one: a `sub` has
/// no answer, so this is how the load knows that every subscription is in
/// place (the first message of each client is not counted).
async fn all_subscribed(
    driver: &mut WsClient,
    subscribed: &Cell<usize>,
    clients: usize,
) -> crate::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while subscribed.get() < clients {
        if Instant::now() > deadline {
            let got = subscribed.get();
            return Err(format!("{got} of {clients} subscriptions in place after 30 s").into());
        }
        driver.ask(PUSHER, "1").await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Opens `n` sessions, [`CONNECTING`] at a time.
async fn open_sessions(port: u16, n: usize) -> crate::Result<Vec<WsClient>> {
    let mut sessions = Vec::with_capacity(n);
    while sessions.len() < n {
        let batch = CONNECTING.min(n - sessions.len());
        let opening: Vec<_> = (0..batch)
            .map(|_| tokio::task::spawn_local(WsClient::connect(port)))
            .collect();
        for handle in opening {
            sessions.push(handle.await??);
        }
    }
    Ok(sessions)
}

/// Has the pusher publish [`BURST`] messages and waits until every client
/// has them (a burst not delivered in time is an error: frames dropped).
async fn burst(driver: &mut WsClient, received: &Cell<u64>, clients: usize) -> crate::Result<()> {
    let from = received.get();
    let expected = BURST * clients as u64;
    driver.ask(PUSHER, &BURST.to_string()).await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while received.get() - from < expected {
        if Instant::now() > deadline {
            let got = received.get() - from;
            return Err(format!("a burst reached {got} of {expected} deliveries in 30 s").into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_from_proc_status_in_bytes() {
        let status = "Name:\tvolley-bench\nVmPeak:\t  20000 kB\nVmRSS:\t   12345 kB\nThreads:\t3\n";
        assert_eq!(vm_rss(status), Some(12345 * 1024));
        assert_eq!(vm_rss("Name:\tx\n"), None);
        assert!(rss_bytes(std::process::id()).unwrap() > 0);
    }
}
