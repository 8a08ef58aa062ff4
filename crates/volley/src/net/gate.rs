//! How many connections a listener keeps open, in all and per source IP.
//!
//! A listener admits a connection before it reads a byte of it
//! ([`ConnectionGate::admit`]); the [`Admission`] lives as long as the
//! connection and is counted until it is dropped. Without such a cap a
//! client that opens connections and never closes them holds a file
//! descriptor, a task and buffers per connection until the process runs
//! out of one of them, and every other listener of the node with it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::locks::lock;
use crate::util::log_limiter::LogLimiter;

/// The limits of one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once, from every source together.
    pub max_connections: usize,
    /// Connections open at once from one IP address.
    pub max_connections_per_ip: usize,
    /// How long a new connection has to send its first
    /// [`first_bytes`](Self::first_bytes) bytes (the protocol's preface or
    /// its first request line) before it is closed.
    pub handshake_timeout: Duration,
    /// How many bytes count as "started": a connection that sent fewer by
    /// `handshake_timeout` is closed.
    pub first_bytes: usize,
}

/// Why a connection was closed by the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `max_connections` were already open.
    #[error("max_connections ({0}) already open")]
    MaxConnections(usize),
    /// `max_connections_per_ip` were already open from its IP.
    #[error("max_connections_per_ip ({0}) already open from this address")]
    MaxConnectionsPerIp(usize),
    /// It sent too little within `handshake_timeout`.
    #[error("fewer than {0} bytes within handshake_timeout")]
    HandshakeTimeout(usize),
}

impl Refusal {
    /// The `reason` label of `volley_gateway_connections_refused_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::MaxConnections(_) => "max_connections",
            Refusal::MaxConnectionsPerIp(_) => "max_connections_per_ip",
            Refusal::HandshakeTimeout(_) => "handshake_timeout",
        }
    }
}

/// What the gate refused so far, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefusedCounts {
    /// Refused because `max_connections` were open.
    pub max_connections: u64,
    /// Refused because `max_connections_per_ip` were open from the IP.
    pub max_connections_per_ip: u64,
    /// Closed for sending too little within `handshake_timeout`.
    pub handshake_timeout: u64,
}

/// Counts the open connections of one listener and refuses past its
/// limits; every refusal is counted, logged at most a few times a
/// second, and exported as `volley_gateway_connections_refused_total`
/// with labels `gateway` and `reason`.
#[derive(Debug)]
pub struct ConnectionGate {
    name: &'static str,
    limits: ConnectionLimits,
    open: Mutex<Open>,
    refused: [AtomicU64; 3],
    log: LogLimiter,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

impl ConnectionGate {
    /// A gate named `name` (the metric's `gateway` label) with `limits`.
    pub fn new(name: &'static str, limits: ConnectionLimits) -> Arc<Self> {
        Arc::new(ConnectionGate {
            name,
            limits,
            open: Mutex::new(Open::default()),
            refused: Default::default(),
            log: LogLimiter::new(5),
        })
    }

    /// The gate's limits.
    pub fn limits(&self) -> &ConnectionLimits {
        &self.limits
    }

    /// Counts a just-accepted connection from `ip`, or refuses it (the
    /// caller closes it unread).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admission, Refusal> {
        let mut open = lock(&self.open);
        let from_ip = open.per_ip.get(&ip).copied().unwrap_or(0);
        if open.total >= self.limits.max_connections {
            drop(open);
            return Err(self.refuse(ip, Refusal::MaxConnections(self.limits.max_connections)));
        }
        if from_ip >= self.limits.max_connections_per_ip {
            drop(open);
            let max = self.limits.max_connections_per_ip;
            return Err(self.refuse(ip, Refusal::MaxConnectionsPerIp(max)));
        }
        open.total += 1;
        *open.per_ip.entry(ip).or_insert(0) += 1;
        Ok(Admission {
            gate: self.clone(),
            ip,
        })
    }

    /// Counts and logs a refusal, and gives it back.
    pub(crate) fn refuse(&self, ip: IpAddr, refusal: Refusal) -> Refusal {
        let at = match refusal {
            Refusal::MaxConnections(_) => 0,
            Refusal::MaxConnectionsPerIp(_) => 1,
            Refusal::HandshakeTimeout(_) => 2,
        };
        self.refused[at].fetch_add(1, Ordering::Relaxed);
        let labels = [("gateway", self.name), ("reason", refusal.reason())];
        metrics::counter!("volley_gateway_connections_refused_total", &labels).increment(1);
        if self.log.allow() {
            tracing::warn!(gateway = self.name, %ip, "connection closed: {refusal}");
        }
        refusal
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        lock(&self.open).total
    }

    /// What was refused so far.
    pub fn refused(&self) -> RefusedCounts {
        let get = |at: usize| self.refused[at].load(Ordering::Relaxed);
        RefusedCounts {
            max_connections: get(0),
            max_connections_per_ip: get(1),
            handshake_timeout: get(2),
        }
    }
}

/// One admitted connection, counted until it is dropped.
#[derive(Debug)]
pub struct Admission {
    gate: Arc<ConnectionGate>,
    ip: IpAddr,
}

impl Admission {
    /// The gate that admitted it.
    pub fn gate(&self) -> &Arc<ConnectionGate> {
        &self.gate
    }

    /// The source address it was admitted for.
    pub fn ip(&self) -> IpAddr {
        self.ip
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut open = lock(&self.gate.open);
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.per_ip.remove(&self.ip);
            }
        }
    }
}
