//! One repetition at one cluster size. The membership round: N fresh
//! members, then the cases in order on the same cluster: `join`,
//! `receptionist` (register on node 1), `kill-unreachable` and
//! `kill-removed` (kill -9 of the last node), `leave` (the node before it
//! leaves gracefully). The partition round: N fresh members behind relays,
//! joined, then the last (N-1)/2 cut off from the others:
//! `partition-removed` and `partition-minority-down`. Each case's time
//! comes from the nodes' own event lines.

use std::path::Path;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use super::node::{node_args, Line, NodeProcess, Program};
use super::view::{now_ms, ClusterView, Seen};
use super::{Case, Timings};
use volley_testkit::relay::Relays;

/// What one repetition measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub case: Case,
    pub ms: f64,
    pub false_downs: u64,
    /// Numbers a survivor streamed to another during the case that never
    /// arrived; `None` where no stream ran.
    pub lost: Option<u64>,
}

/// One repetition's results, and a line for the notes.
#[derive(Debug, Clone)]
pub struct RoundOutcome {
    pub cases: Vec<Measured>,
    /// Process spawn to the last node's `started` line (JVM and actor
    /// system start-up, which `join` leaves out).
    pub startup_ms: f64,
    /// The first node's `started` line (the settings in force).
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Why the round stopped before its last case (the cases before it
    /// still count).
    pub failure: Option<String>,
}

/// Where the members listen: the ports they advertise and, behind a relay,
/// the ports they bind.
struct Ports {
    canonical: Vec<u16>,
    bind: Option<Vec<u16>>,
}

/// How long numbers still in flight when a stream stops may take to
/// arrive before they count as lost.
const DELIVERY: Duration = Duration::from_secs(5);

/// Seed nodes: the first three members.
const SEEDS: usize = 3;

/// The longest any case may take before the repetition fails (a loaded
/// 2-core machine starting 7 JVMs is slow).
const CASE_TIMEOUT: Duration = Duration::from_secs(120);

/// The members and what they printed.
struct Cluster {
    nodes: Vec<NodeProcess>,
    events: Receiver<Line>,
    view: ClusterView,
    /// Where the previous case ended (the window of false downs).
    mark: f64,
    /// The cases measured so far.
    done: Vec<Measured>,
}

impl Cluster {
    /// Starts `n` members at once; the first three are the seeds.
    fn start(
        program: &Program,
        ports: &Ports,
        timings: &Timings,
        log_dir: &Path,
        prefix: &str,
    ) -> crate::Result<Cluster> {
        let n = ports.canonical.len();
        let (tx, rx) = channel();
        let mark = now_ms();
        let mut nodes = Vec::with_capacity(n);
        for (i, &port) in ports.canonical.iter().enumerate() {
            let mut args = node_args(port, &ports.canonical[..SEEDS.min(n)], timings);
            if let Some(bind) = &ports.bind {
                args.extend(["--bind-port".to_string(), bind[i].to_string()]);
            }
            let log = log_dir.join(format!("{prefix}-node{i}.log"));
            nodes.push(NodeProcess::start(program, i, &args, &log, tx.clone())?);
        }
        Ok(Cluster {
            nodes,
            events: rx,
            view: ClusterView::new(n),
            mark,
            done: Vec::new(),
        })
    }

    /// Every member started and sees every member Up: when the last one
    /// started, when all were Up, and their addresses.
    fn joined(&mut self) -> crate::Result<(f64, f64, Vec<String>)> {
        let all: Vec<usize> = (0..self.nodes.len()).collect();
        let started = self.wait("every node started", |v| v.all_started(&all))?;
        let members = self.view.addresses(&all).expect("all started");
        let up: Seen = |v| &v.up;
        let joined = self.wait("every node sees every node Up", |v| {
            v.all_seen(&all, &members, up, f64::MIN)
        })?;
        Ok((started, joined, members))
    }

    /// Lets every member go (stdin closed), killing what is left after a
    /// grace period.
    fn stop(self) {
        for node in self.nodes {
            node.stop(Duration::from_secs(10));
        }
    }

    /// Reads lines until `done` answers, or fails after `CASE_TIMEOUT`.
    fn wait(
        &mut self,
        what: &str,
        done: impl Fn(&ClusterView) -> Option<f64>,
    ) -> crate::Result<f64> {
        let deadline = Instant::now() + CASE_TIMEOUT;
        loop {
            if let Some(t) = done(&self.view) {
                return Ok(t);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok((i, Ok(event))) => self.view.apply(i, event),
                Ok((i, Err(bad))) => return Err(format!("node {i}: {bad}").into()),
                Err(_) => {
                    return Err(format!("{what}: not within {} s", CASE_TIMEOUT.as_secs()).into())
                }
            }
        }
    }

    /// Ends a case that began at `start` and was complete at `end`.
    fn measured(&mut self, case: Case, start: f64, end: f64, excused: &[String]) {
        let false_downs = self.view.false_downs(self.mark, end, excused);
        self.mark = end;
        self.done.push(Measured {
            case,
            ms: end - start,
            false_downs,
            lost: None,
        });
    }

    /// Starts node `from` streaming numbers to node `to`'s sink.
    fn stream(&mut self, from: usize, to: &str) -> crate::Result<()> {
        self.nodes[from].command(&format!("stream {to}"))
    }

    /// Stops `from`'s stream and counts what `to` never got: asks `to`
    /// until it has every number or [`DELIVERY`] has passed since the
    /// stream stopped.
    fn stream_lost(&mut self, from: usize, to: usize) -> crate::Result<u64> {
        let asked = now_ms();
        self.nodes[from].command("stop")?;
        let sent = self.wait("the stream's count", |v| {
            v.nodes[from]
                .sent
                .filter(|(t, _)| *t >= asked)
                .map(|(_, n)| n as f64)
        })? as u64;
        let deadline = Instant::now() + DELIVERY;
        loop {
            let asked = now_ms();
            self.nodes[to].command("received")?;
            let received = self.wait("the sink's count", |v| {
                v.nodes[to]
                    .received
                    .filter(|(t, _)| *t >= asked)
                    .map(|(_, n)| n as f64)
            })? as u64;
            if received >= sent || Instant::now() >= deadline {
                return Ok(sent.saturating_sub(received));
            }
            // Polling a count that is still rising; time passing is what
            // the deadline measures.
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sets `lost` on the cases measured since `from` (an index in `done`).
    fn set_lost(&mut self, from: usize, lost: u64) {
        for measured in &mut self.done[from..] {
            measured.lost = Some(lost);
        }
    }

    /// The cases measured, and why the round stopped early if it did;
    /// `Err` when not even the first case was measured.
    fn outcome(
        &mut self,
        result: crate::Result<()>,
    ) -> crate::Result<(Vec<Measured>, Option<String>)> {
        match result {
            Ok(()) => Ok((std::mem::take(&mut self.done), None)),
            Err(e) if self.done.is_empty() => Err(e),
            Err(e) => Ok((std::mem::take(&mut self.done), Some(e.to_string()))),
        }
    }
}

/// Runs the membership round with `n` members; node logs go to `log_dir`
/// as `<prefix>-node<i>.log`.
pub fn run(
    program: &Program,
    n: usize,
    timings: &Timings,
    log_dir: &Path,
    prefix: &str,
) -> crate::Result<RoundOutcome> {
    if n < 3 {
        return Err("a cluster of at least 3 members is needed (kill, then leave)".into());
    }
    let ports = Ports {
        canonical: free_ports(n)?,
        bind: None,
    };
    let mut c = Cluster::start(program, &ports, timings, log_dir, prefix)?;
    let spawned = c.mark;
    let mut startup_ms = 0.0;
    let result = membership(&mut c, n, spawned, &mut startup_ms);
    let outcome = c.outcome(result);
    let settings = c.view.nodes[0].settings.clone();
    c.stop();
    let (cases, failure) = outcome?;
    Ok(RoundOutcome {
        cases,
        startup_ms,
        settings,
        failure,
    })
}

fn membership(c: &mut Cluster, n: usize, spawned: f64, startup_ms: &mut f64) -> crate::Result<()> {
    let all: Vec<usize> = (0..n).collect();
    let (started, joined, members) = c.joined()?;
    *startup_ms = started - spawned;
    c.measured(Case::Join, started, joined, &[]);

    let registered = now_ms();
    c.nodes[1].command("register")?;
    let listed = c.wait("the service listed on every node", |v| v.all_listed(&all))?;
    c.measured(Case::Receptionist, registered, listed, &[]);

    let victim = n - 1;
    let survivors: Vec<usize> = (0..victim).collect();
    let gone = vec![members[victim].clone()];
    c.stream(0, &members[1])?;
    let streamed_from = c.done.len();
    let killed = now_ms();
    c.nodes[victim].kill()?;
    let unreachable: Seen = |v| &v.unreachable;
    let t = c.wait("the killed node Unreachable on every survivor", |v| {
        v.all_seen(&survivors, &gone, unreachable, killed)
    })?;
    c.measured(Case::KillUnreachable, killed, t, &gone);
    let removed: Seen = |v| &v.removed;
    let t = c.wait("the killed node Removed on every survivor", |v| {
        v.all_seen(&survivors, &gone, removed, killed)
    })?;
    c.measured(Case::KillRemoved, killed, t, &gone);
    let lost = c.stream_lost(0, 1)?;
    c.set_lost(streamed_from, lost);

    let leaver = n - 2;
    let stay: Vec<usize> = (0..leaver).collect();
    let left = vec![members[leaver].clone(), members[victim].clone()];
    let asked = now_ms();
    c.nodes[leaver].command("leave")?;
    let t = c.wait("the leaving node Removed on every other node", |v| {
        v.all_seen(&stay, &left[..1], removed, asked)
    })?;
    c.measured(Case::Leave, asked, t, &left);
    Ok(())
}

/// What the partition round measured.
#[derive(Debug, Clone)]
pub struct PartitionOutcome {
    pub cases: Vec<Measured>,
    /// Why the round stopped before its last case.
    pub failure: Option<String>,
    /// Relayed connections whose member was not found (never cut).
    pub unknown_links: u64,
    /// Bytes between the members at rest, per member per second: all the
    /// relays carried over [`QUIET`] once the cluster had joined.
    pub bytes_per_member_s: Option<f64>,
}

/// The window over which traffic at rest is measured.
pub const QUIET: Duration = Duration::from_secs(10);

/// Runs the partition round with `n` members, each behind a relay.
pub fn run_partition(
    program: &Program,
    n: usize,
    timings: &Timings,
    log_dir: &Path,
    prefix: &str,
) -> crate::Result<PartitionOutcome> {
    let bind = free_ports(n)?;
    let relays = Relays::start(&bind)?;
    let ports = Ports {
        canonical: relays.ports().to_vec(),
        bind: Some(bind),
    };
    let mut c = Cluster::start(program, &ports, timings, log_dir, prefix)?;
    relays.set_pids(c.nodes.iter().map(NodeProcess::pid).collect());
    let mut traffic = None;
    let result = partition(&mut c, &relays, n, &mut traffic);
    let outcome = c.outcome(result);
    c.stop();
    let (cases, failure) = outcome?;
    Ok(PartitionOutcome {
        cases,
        failure,
        unknown_links: relays.unknown(),
        bytes_per_member_s: traffic,
    })
}

fn partition(
    c: &mut Cluster,
    relays: &Relays,
    n: usize,
    traffic: &mut Option<f64>,
) -> crate::Result<()> {
    let (_, joined, members) = c.joined()?;
    c.mark = joined;
    let before = relays.relayed_bytes();
    // Time passing is the measurement: the members' lines wait in the
    // channel, stamped by the members.
    std::thread::sleep(QUIET);
    let bytes = relays.relayed_bytes() - before;
    *traffic = Some(bytes as f64 / n as f64 / QUIET.as_secs_f64());
    let minority_size = (n - 1) / 2;
    let majority: Vec<usize> = (0..n - minority_size).collect();
    let minority: Vec<usize> = (n - minority_size..n).collect();
    let cut_off: Vec<String> = minority.iter().map(|&i| members[i].clone()).collect();
    let sides: Vec<u8> = (0..n).map(|i| u8::from(i >= n - minority_size)).collect();
    c.stream(0, &members[1])?;
    let streamed_from = c.done.len();
    let cut = now_ms();
    relays.partition(&sides);
    let removed: Seen = |v| &v.removed;
    let t = c.wait("the minority Removed on every majority node", |v| {
        v.all_seen(&majority, &cut_off, removed, cut)
    })?;
    c.measured(Case::PartitionRemoved, cut, t, &cut_off);
    let t = c.wait("every minority node shut down", |v| {
        v.all_terminated(&minority)
    })?;
    c.measured(Case::PartitionMinorityDown, cut, t, &cut_off);
    let lost = c.stream_lost(0, 1)?;
    c.set_lost(streamed_from, lost);
    Ok(())
}

/// `n` distinct loopback ports that were free a moment ago (all held at
/// once, so no two are the same).
pub(crate) fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}
