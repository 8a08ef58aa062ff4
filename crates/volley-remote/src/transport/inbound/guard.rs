//! What an inbound connection may cost before it is closed: how many may be
//! open (in all, and per source IP), how long one may stay silent, and how
//! often what it does may be logged.
//!
//! The listener admits a connection before it reads a byte of it
//! ([`InboundGuard::admit`]); the admission lives as long as the
//! connection's task and is counted until then. Idleness is judged per
//! incarnation of the peer, not per connection: a volley node's ordinary and
//! large lanes may carry nothing for hours while its control lane carries a
//! heartbeat every second, and those quiet lanes must stay open. Every
//! connection of one incarnation shares one "last heard" time
//! ([`IdleWatch`]); a connection is closed once nothing arrived on any of
//! them for `limits.idle_timeout`.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::transport::settings::LimitSettings;
use crate::transport::support::{lock, log_limited};
use crate::wire::Address;

/// Counts of open inbound connections, and the "last heard" times of the
/// incarnations they come from.
pub(crate) struct InboundGuard {
    max_total: usize,
    max_per_ip: usize,
    idle_timeout: Duration,
    open: Mutex<Open>,
    heard: Mutex<HashMap<(Address, u64), Arc<Heard>>>,
}

#[derive(Default)]
struct Open {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// When something last arrived from one incarnation, in milliseconds since
/// `start`.
struct Heard {
    start: Instant,
    at_ms: AtomicU64,
}

impl Heard {
    fn touch(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        self.at_ms.store(now, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.at_ms.load(Ordering::Relaxed))
    }
}

tokio::task_local! {
    /// The guard of the listener that accepted the current connection.
    static GUARD: Arc<InboundGuard>;
}

impl InboundGuard {
    pub(crate) fn new(limits: &LimitSettings) -> Arc<Self> {
        Arc::new(InboundGuard {
            max_total: limits.max_inbound_connections,
            max_per_ip: limits.max_inbound_connections_per_ip,
            idle_timeout: limits.idle_timeout,
            open: Mutex::new(Open::default()),
            heard: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a just-accepted connection from `ip`, or refuses it (with a
    /// rate-limited warning) when a cap is reached: the caller then closes
    /// it unread.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Admission> {
        let mut open = lock(&self.open);
        let from_ip = open.per_ip.get(&ip).copied().unwrap_or(0);
        let refused = if open.total >= self.max_total {
            Some(("limits.max_inbound_connections", self.max_total))
        } else if from_ip >= self.max_per_ip {
            Some(("limits.max_inbound_connections_per_ip", self.max_per_ip))
        } else {
            None
        };
        if let Some((key, max)) = refused {
            drop(open);
            log_limited!(warn, %ip, "inbound connection refused: {max} already open ({key})");
            return None;
        }
        open.total += 1;
        *open.per_ip.entry(ip).or_insert(0) += 1;
        Some(Admission {
            guard: self.clone(),
            ip,
        })
    }
}

/// One admitted connection, counted until it is dropped.
pub(crate) struct Admission {
    guard: Arc<InboundGuard>,
    ip: IpAddr,
}

impl Admission {
    /// The inbound connections open now, this one included (for the
    /// listener's debug lines).
    pub(crate) fn open(&self) -> usize {
        lock(&self.guard.open).total
    }

    /// Runs the connection's task: the admission is held until it ends, and
    /// the read loop finds the guard for its [`IdleWatch`].
    pub(crate) fn run<F: Future<Output = ()>>(self, task: F) -> impl Future<Output = ()> {
        let guard = self.guard.clone();
        GUARD.scope(guard, async move {
            let _admitted = self;
            task.await
        })
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut open = lock(&self.guard.open);
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.per_ip.remove(&self.ip);
            }
        }
    }
}

/// The read side of one handshaken inbound connection: reads, noting that
/// its incarnation was heard from, and fails once the incarnation was
/// silent on all its connections for the idle timeout.
pub(crate) struct IdleWatch {
    shared: Option<Joined>,
    timeout: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

/// The guard, the incarnation (address and uid) and its "last heard".
type Joined = (Arc<InboundGuard>, (Address, u64), Arc<Heard>);

impl IdleWatch {
    /// Joins the incarnation `uid` of `peer`; without a guard (a connection
    /// not accepted by `run_listener`) it never times out.
    pub(crate) fn new(peer: &Address, uid: u64) -> Self {
        let guard = GUARD.try_with(Arc::clone).ok();
        let timeout = guard
            .as_ref()
            .map_or(Duration::from_secs(365 * 24 * 3600), |g| g.idle_timeout);
        let shared = guard.map(|guard| {
            let key = (peer.clone(), uid);
            let heard = lock(&guard.heard)
                .entry(key.clone())
                .or_insert_with(|| {
                    Arc::new(Heard {
                        start: Instant::now(),
                        at_ms: AtomicU64::new(0),
                    })
                })
                .clone();
            heard.touch();
            (guard, key, heard)
        });
        IdleWatch {
            shared,
            timeout,
            sleep: Box::pin(tokio::time::sleep(timeout)),
        }
    }

    /// `stream.read_buf(buf)`, or an error once the incarnation has been
    /// silent for the idle timeout.
    pub(crate) async fn read_buf<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        buf: &mut BytesMut,
    ) -> std::io::Result<usize> {
        loop {
            tokio::select! {
                biased;
                read = stream.read_buf(buf) => {
                    if let Some((_, _, heard)) = &self.shared {
                        heard.touch();
                    }
                    return read;
                }
                () = &mut self.sleep => {
                    let Some((_, _, heard)) = &self.shared else {
                        self.sleep.as_mut().reset(tokio::time::Instant::now() + self.timeout);
                        continue;
                    };
                    let due = heard.last() + self.timeout;
                    if due <= Instant::now() {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!(
                                "nothing arrived from the peer for {:?} (limits.idle_timeout)",
                                self.timeout
                            ),
                        ));
                    }
                    self.sleep.as_mut().reset(due.into());
                }
            }
        }
    }
}

impl Drop for IdleWatch {
    fn drop(&mut self) {
        if let Some((guard, key, heard)) = self.shared.take() {
            let mut all = lock(&guard.heard);
            // The map's reference and this one: the incarnation's last
            // connection ends.
            if Arc::strong_count(&heard) == 2 {
                all.remove(&key);
            }
        }
    }
}
