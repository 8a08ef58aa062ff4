//! The steps of one inbound connection up to its first frame, timed from
//! its accept: a node whose peers' handshakes time out shows where the
//! time went. Each step is a trace line as it is reached; the lines that
//! end the handshake (debug: `inbound lane accepted`, `closed before
//! telling its stamp`; the warning of a failed one) carry them all. A
//! `closed before telling its stamp` soon after its accept means the peer
//! gave up before this node took the connection: the time went before
//! the node (a proxy, a relay, the accept queue), not in it.

use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A step of an inbound connection before its first frame.
#[derive(Clone, Copy)]
pub(super) enum Stage {
    /// Its task was first polled.
    TaskRuns,
    Tls,
    RequestRead,
    Answered,
    StampRead,
}

const STAGES: usize = 5;

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::TaskRuns => "its task runs",
            Stage::Tls => "TLS handshake done",
            Stage::RequestRead => "handshake request read",
            Stage::Answered => "answered",
            Stage::StampRead => "stamp read",
        }
    }
}

/// When one connection reached each step, since its accept.
pub(super) struct Stages {
    peer: SocketAddr,
    accepted: Instant,
    at: [Option<Duration>; STAGES],
}

impl Stages {
    /// A connection from `peer`, accepted now.
    pub(super) fn start(peer: SocketAddr) -> Self {
        Stages {
            peer,
            accepted: Instant::now(),
            at: [None; STAGES],
        }
    }

    pub(super) fn reached(&mut self, stage: Stage) {
        let at = self.accepted.elapsed();
        self.at[stage as usize] = Some(at);
        tracing::trace!(peer = %self.peer, since_accept = ?at, "inbound connection: {}", stage.name());
    }
}

impl fmt::Display for Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = [
            Stage::TaskRuns,
            Stage::Tls,
            Stage::RequestRead,
            Stage::Answered,
            Stage::StampRead,
        ];
        for stage in all {
            if let Some(at) = self.at[stage as usize] {
                write!(f, "{} +{at:?}, ", stage.name())?;
            }
        }
        write!(f, "now +{:?}", self.accepted.elapsed())
    }
}
