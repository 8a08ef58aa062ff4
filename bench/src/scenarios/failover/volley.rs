//! volley's side of `failover`: per case, a fresh watched node (a child
//! process) and a fresh watcher node in this process, the same timeline as
//! the Pekko harness (`bench/peers/pekko/.../Failover.java`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Terminated};
use volley_remote::{Remoting, RemotingEvent};

use super::node::{start_node, Blob, NodeProcess, Payload, TargetMsg};
use super::{Case, Outcome, Params};
use crate::report::failover_rows::FailoverRow;

/// One blob of the large-messages case.
pub const BLOB_BYTES: usize = 10_000_000;
/// Blobs in flight (each acknowledged by the sink).
const BLOB_WINDOW: usize = 2;
/// The small-message stream: `STREAM_BATCH` messages every `STREAM_PERIOD`.
const STREAM_PERIOD: Duration = Duration::from_millis(10);
const STREAM_BATCH: u64 = 20;
/// How often the restart case asks the new incarnation.
const PROBE_PERIOD: Duration = Duration::from_millis(10);
/// How long a check ask (a target, the watcher) may take.
const ASK: Duration = Duration::from_secs(5);

/// The `Terminated` signals the watcher got, by actor, with arrival times.
#[derive(Default)]
struct Terminations {
    got: Mutex<Vec<(String, Instant)>>,
    changed: Condvar,
}

impl Terminations {
    fn add(&self, actor: String, at: Instant) {
        lock(&self.got).push((actor, at));
        self.changed.notify_all();
    }

    fn total(&self) -> usize {
        lock(&self.got).len()
    }

    fn distinct(&self) -> usize {
        lock(&self.got)
            .iter()
            .map(|(a, _)| a.as_str())
            .collect::<HashSet<_>>()
            .len()
    }

    fn first(&self) -> Option<Instant> {
        lock(&self.got).first().map(|(_, at)| *at)
    }

    /// Waits until `n` distinct actors terminated: the `n`-th one's
    /// arrival, or `None` at the deadline.
    fn await_distinct(&self, n: usize, deadline: Instant) -> Option<Instant> {
        let mut got = lock(&self.got);
        loop {
            let mut seen = HashSet::new();
            for (actor, at) in got.iter() {
                if seen.insert(actor.as_str()) && seen.len() == n {
                    return Some(*at);
                }
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            got = self
                .changed
                .wait_timeout(got, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Watches every target, records each `Terminated` and survives it;
/// answers a ping (the liveness check).
struct Watcher {
    targets: Vec<ActorRef<TargetMsg>>,
    terminations: Arc<Terminations>,
}

impl Actor for Watcher {
    type Msg = ActorRef<()>;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        for t in &self.targets {
            ctx.watch(t);
        }
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, reply_to: ActorRef<()>) -> HandleResult {
        reply_to.tell(());
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.terminations
            .add(t.actor.path().to_string(), Instant::now());
        Ok(())
    }
}

/// The remoting lifecycle events of the watcher's node, with arrival times.
struct EventLog {
    events: Arc<Mutex<Vec<(RemotingEvent, Instant)>>>,
}

impl Actor for EventLog {
    type Msg = RemotingEvent;
    fn handle(&mut self, _ctx: &mut Context<Self>, event: RemotingEvent) -> HandleResult {
        lock(&self.events).push((event, Instant::now()));
        Ok(())
    }
}

/// Sends the first answer from the node with pid `expected` (its arrival).
struct Probe {
    expected: u64,
    answered: std::sync::mpsc::Sender<Instant>,
}

impl Actor for Probe {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, pid: u64) -> HandleResult {
        if pid == self.expected {
            let _ = self.answered.send(Instant::now());
        }
        Ok(())
    }
}

/// Passes the sink's acks to the blob task.
struct Acks(tokio::sync::mpsc::UnboundedSender<u64>);

impl Actor for Acks {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, len: u64) -> HandleResult {
        let _ = self.0.send(len);
        Ok(())
    }
}

/// Repeats `f` every `period` on a thread until the returned flag is set.
fn every(period: Duration, mut f: impl FnMut() + Send + 'static) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let mut next = Instant::now();
        while !flag.load(Ordering::Relaxed) {
            f();
            next += period;
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
    });
    stop
}

/// A random extra wait before the failure, below one heartbeat interval,
/// so that the failure falls at any point between two heartbeats (the
/// detection time depends on it) rather than where the start-up sequence
/// happens to put it.
fn phase(params: &Params) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    random % params.heartbeat_ms.max(1)
}

fn ms_since(t0: Instant, t: Option<Instant>) -> Option<f64> {
    t.map(|t| (t.saturating_duration_since(t0).as_secs_f64() * 1e4).round() / 10.0)
}

fn ms(v: Option<f64>) -> String {
    v.map_or("never".into(), |v| format!("{v:.0} ms"))
}

/// The watcher node and what it watches, for one case.
struct Watching<'a> {
    rt: &'a tokio::runtime::Runtime,
    params: &'a Params,
    system: ActorSystem,
    remoting: Remoting,
    targets: Vec<ActorRef<TargetMsg>>,
    watcher: ActorRef<ActorRef<()>>,
    terminations: Arc<Terminations>,
    events: Arc<Mutex<Vec<(RemotingEvent, Instant)>>>,
}

impl Watching<'_> {
    /// Asks `target` for its node's pid.
    fn pid(&self, target: &ActorRef<TargetMsg>) -> Option<u64> {
        self.rt.block_on(target.ask(TargetMsg::Pid, ASK)).ok()
    }

    fn watcher_alive(&self) -> bool {
        !self.watcher.is_terminated() && self.rt.block_on(self.watcher.ask(|r| r, ASK)).is_ok()
    }

    /// The lifecycle events since `t0`, for the notes.
    fn events_since(&self, t0: Instant) -> String {
        let events = lock(&self.events);
        let list: Vec<String> = events
            .iter()
            .filter(|(_, at)| *at >= t0)
            .map(|(e, at)| {
                let what = match e {
                    RemotingEvent::Associated { .. } => "Associated".to_string(),
                    RemotingEvent::Disassociated { reason, .. } => {
                        format!("Disassociated({reason})")
                    }
                    RemotingEvent::Quarantined { .. } => "Quarantined".to_string(),
                    RemotingEvent::AddressTerminated { reason, .. } => {
                        format!("AddressTerminated({reason})")
                    }
                };
                format!(
                    "{what} +{:.0} ms",
                    at.duration_since(t0).as_secs_f64() * 1e3
                )
            })
            .collect();
        if list.is_empty() {
            "none".into()
        } else {
            list.join(", ")
        }
    }

    fn quarantines(&self) -> usize {
        lock(&self.events)
            .iter()
            .filter(|(e, _)| matches!(e, RemotingEvent::Quarantined { .. }))
            .count()
    }

    /// `n` actors reported by `t0` + the detection timeout.
    fn await_all(&self, t0: Instant) -> Option<Instant> {
        self.terminations.await_distinct(
            self.targets.len(),
            t0 + Duration::from_millis(self.params.detect_timeout_ms),
        )
    }

    fn window(&self) {
        std::thread::sleep(Duration::from_millis(self.params.window_ms));
    }
}

/// Runs one case on volley.
pub fn run_case(
    rt: &tokio::runtime::Runtime,
    params: &Params,
    case: Case,
) -> crate::Result<Outcome> {
    let mut nodes = vec![NodeProcess::start(params, 0)?];
    let (system, remoting) = start_node(rt, "failover-a", 0, params)?;
    let mut streams = Vec::new();
    let result = (|| {
        let node = &nodes[0];
        let mut targets = Vec::new();
        for i in 0..params.watched {
            let t: ActorRef<TargetMsg> =
                remoting.resolve(&format!("{}/user/target-{i}", node.address))?;
            rt.block_on(t.ask(TargetMsg::Pid, Duration::from_secs(30)))
                .map_err(|e| format!("target-{i} did not answer before the case: {e}"))?;
            targets.push(t);
        }
        let events = Arc::new(Mutex::new(Vec::new()));
        let log = system.spawn_anonymous(Props::new({
            let events = events.clone();
            move || EventLog {
                events: events.clone(),
            }
        }))?;
        system.event_stream().subscribe::<RemotingEvent>(log);
        let terminations = Arc::new(Terminations::default());
        let watcher = system.spawn(
            "watcher",
            Props::new({
                let (targets, terminations) = (targets.clone(), terminations.clone());
                move || Watcher {
                    targets: targets.clone(),
                    terminations: terminations.clone(),
                }
            }),
        )?;
        let w = Watching {
            rt,
            params,
            system: system.clone(),
            remoting: remoting.clone(),
            targets,
            watcher,
            terminations,
            events,
        };
        streams.push(every(STREAM_PERIOD, {
            let targets = w.targets.clone();
            let mut n = 0u64;
            move || {
                for _ in 0..STREAM_BATCH {
                    targets[(n % targets.len() as u64) as usize].tell(TargetMsg::Work(n));
                    n += 1;
                }
            }
        }));
        std::thread::sleep(Duration::from_millis(params.settle_ms + phase(params)));
        run(&w, case, &mut nodes)
    })();
    for s in streams {
        s.store(true, Ordering::Relaxed);
    }
    remoting.shutdown();
    rt.block_on(system.terminate());
    for n in nodes {
        n.close();
    }
    result
}

/// The failure and what the watcher saw of it.
fn run(w: &Watching, case: Case, nodes: &mut Vec<NodeProcess>) -> crate::Result<Outcome> {
    let params = w.params;
    let mut detect = None;
    let mut reassociate = None;
    let detail = match case {
        Case::Kill => {
            nodes[0].signal(libc::SIGKILL)?;
            let t0 = Instant::now();
            detect = ms_since(t0, w.await_all(t0));
            w.window();
            format!(
                "first Terminated {} after the kill; events: {}",
                ms(ms_since(t0, w.terminations.first())),
                w.events_since(t0)
            )
        }
        Case::StallShort => {
            nodes[0].signal(libc::SIGSTOP)?;
            let t0 = Instant::now();
            std::thread::sleep(Duration::from_millis(params.stall_short_ms));
            nodes[0].signal(libc::SIGCONT)?;
            let mut unreachable = 0;
            let end = Instant::now() + Duration::from_millis(params.window_ms);
            while Instant::now() < end {
                if w.remoting.is_reachable(&nodes[0].address) == Some(false) {
                    unreachable += 1;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let answered = w.pid(&w.targets[0]).is_some();
            format!(
                "stopped {} ms; target-0 answered after SIGCONT: {}; unreachable verdicts {unreachable}; events: {}",
                params.stall_short_ms,
                yes(answered),
                w.events_since(t0)
            )
        }
        Case::StallLong => {
            nodes[0].signal(libc::SIGSTOP)?;
            let t0 = Instant::now();
            detect = ms_since(t0, w.await_all(t0));
            let stopped = t0.elapsed();
            nodes[0].signal(libc::SIGCONT)?;
            w.window();
            format!(
                "stopped {} ms (until every Terminated or the timeout); events: {}",
                stopped.as_millis(),
                w.events_since(t0)
            )
        }
        Case::Restart => {
            let port = nodes[0].port();
            nodes[0].signal(libc::SIGKILL)?;
            let t0 = Instant::now();
            let fresh = NodeProcess::start(params, port)?;
            let (tx, rx) = std::sync::mpsc::channel();
            let probe = w.system.spawn_anonymous(Props::new({
                let (expected, tx) = (fresh.pid as u64, tx.clone());
                move || Probe {
                    expected,
                    answered: tx.clone(),
                }
            }))?;
            let target: ActorRef<TargetMsg> = w
                .remoting
                .resolve(&format!("{}/user/target-0", fresh.address))?;
            let up = fresh.up;
            nodes.push(fresh);
            let asks = every(PROBE_PERIOD, move || {
                target.tell(TargetMsg::Pid(probe.clone()))
            });
            let answered = rx
                .recv_timeout(Duration::from_millis(params.detect_timeout_ms))
                .ok();
            asks.store(true, Ordering::Relaxed);
            reassociate = ms_since(up, answered);
            let all = w.await_all(t0);
            w.window();
            format!(
                "new node up {} after the kill, answered {} after the kill; old incarnation's Terminated: first {}, all {} after the kill; events: {}",
                ms(ms_since(t0, Some(up))),
                ms(ms_since(t0, answered)),
                ms(ms_since(t0, w.terminations.first())),
                ms(ms_since(t0, all)),
                w.events_since(t0)
            )
        }
        Case::LargeMessages => large_messages(w, &nodes[0])?,
    };
    let total = w.terminations.total();
    // Where the node failed, one Terminated per watched actor is right and
    // the rest are duplicates; where it did not, every one is false.
    let false_terminated = if case.fails() {
        total - w.terminations.distinct()
    } else {
        total
    };
    Ok(Outcome {
        row: FailoverRow {
            case: case.name().to_string(),
            watched: w.targets.len() as u64,
            terminated: total as u64,
            false_terminated: false_terminated as u64,
            watcher_alive: w.watcher_alive(),
            detect_ms: detect,
            reassociate_ms: reassociate,
        },
        detail: format!("{detail}; quarantine events {}", w.quarantines()),
    })
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// 10 MB blobs to the sink, `BLOB_WINDOW` in flight, for `large_ms`, while
/// the watcher's detector is polled every 10 ms.
fn large_messages(w: &Watching, node: &NodeProcess) -> crate::Result<String> {
    let params = w.params;
    let sink: ActorRef<Blob> = w.remoting.resolve(&format!("{}/user/sink", node.address))?;
    let (ack_tx, mut ack_rx) = tokio::sync::mpsc::unbounded_channel();
    let acks = w
        .system
        .spawn_anonymous(Props::new(move || Acks(ack_tx.clone())))?;
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let task = w.system.runtime_handle().spawn({
        let stop = stop.clone();
        async move {
            let blob = vec![0x5a; BLOB_BYTES];
            let (mut outstanding, mut acked) = (0usize, 0u64);
            loop {
                while !stop.load(Ordering::Relaxed) && outstanding < BLOB_WINDOW {
                    let msg = Blob {
                        data: Payload(blob.clone()),
                        ack: acks.clone(),
                    };
                    if sink.send(msg).await.is_err() {
                        return None;
                    }
                    outstanding += 1;
                }
                if outstanding == 0 {
                    return Some(acked);
                }
                match tokio::time::timeout(Duration::from_secs(60), ack_rx.recv()).await {
                    Ok(Some(_)) => {
                        outstanding -= 1;
                        acked += 1;
                    }
                    _ => return None,
                }
            }
        }
    });
    let mut unreachable = 0;
    let end = t0 + Duration::from_millis(params.large_ms);
    while Instant::now() < end {
        if w.remoting.is_reachable(&node.address) == Some(false) {
            unreachable += 1;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    let blobs = w.rt.block_on(task).ok().flatten();
    let secs = t0.elapsed().as_secs_f64();
    w.window();
    let answered = w.pid(&w.targets[0]).is_some();
    let stream = match blobs {
        Some(n) => format!(
            "{n} blobs of 10 MB acknowledged in {secs:.1} s ({:.0} MB/s)",
            n as f64 * (BLOB_BYTES as f64 / 1e6) / secs
        ),
        None => "the blob stream failed or did not drain within 60 s".into(),
    };
    Ok(format!(
        "{stream}; target-0 answered afterwards: {}; unreachable verdicts {unreachable}; events: {}",
        yes(answered),
        w.events_since(t0)
    ))
}
