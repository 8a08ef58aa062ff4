//! A peer node in a second OS process: the test binary runs itself again
//! with `--ignored --exact peer_process` and a configuration in
//! [`PEER_ENV`]. Only a separate process can be killed with SIGKILL or
//! stalled with SIGSTOP without taking the test down with it.
//!
//! The peer prints `ADDRESS`, `UID` and then one line per remoting event
//! and per answered command on its stdout; it reads commands from its
//! stdin and exits when stdin closes, so a test that dies leaves no peer
//! behind even if its [`Peer`] guard never runs.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tokio::sync::mpsc;
use tracing::Level;
use volley::{
    Actor, ActorRef, ActorSystem, AnyRef, Context, DeadLetter, HandleResult, Props, Settings,
    Terminated,
};
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::wire::Address;
use volley_remote::{Registry, RemoteSettings, Remoting, RemotingEvent};

use crate::common::{self, Node};
use crate::log_capture;

mod child;
mod parent;

/// The process suites' turns. Every test has peer processes of its own.
/// One that holds a peer to a time bound (a detection figure, a stall
/// that must not be taken for a crash), or that measures this whole
/// process (its file descriptors, its memory, every warning it logs),
/// runs [`alone`]. The others, whose deadlines are only there to fail
/// instead of hanging, share the machine ([`shared`]) with at most one
/// more: libtest runs as many tests at once as there are cores, two here.
static TURNS: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A turn with no other process test running.
pub async fn alone() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    TURNS.write().await
}

/// A turn that other [`shared`] turns may overlap.
pub async fn shared() -> tokio::sync::RwLockReadGuard<'static, ()> {
    TURNS.read().await
}

pub use child::{run_peer, Peer, PeerConfig};
// Not every test binary that includes this module uses the test side.
#[allow(unused_imports)]
pub use parent::*;

/// Set in the peer process: its configuration (see [`PeerConfig`]).
pub const PEER_ENV: &str = "VOLLEY_FAILOVER_PEER";

/// Messages of more than 64 KiB travel on the large lane.
pub const LARGE: usize = 100 * 1024;

/// A peer that was never told to quit exits on its own after this long.
const PEER_LIFETIME: Duration = Duration::from_secs(180);

pub const LOAD_ID: u32 = 200;
pub const WORK_ID: u32 = 201;
pub const JOB_ID: u32 = 202;

/// Bytes that serialize as one byte string. `Vec<u8>` goes through serde
/// element by element, which in a debug build costs far more per 10 MB
/// message than the transport does: the tests would measure serde.
#[derive(Clone, PartialEq, Eq)]
pub struct Bulk(pub Vec<u8>);

impl fmt::Debug for Bulk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bulk({} bytes)", self.0.len())
    }
}

impl Serialize for Bulk {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bulk {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BytesVisitor;
        impl<'de> Visitor<'de> for BytesVisitor {
            type Value = Bulk;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Bulk, E> {
                Ok(Bulk(v.to_vec()))
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Bulk, E> {
                Ok(Bulk(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bulk, A::Error> {
                let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element()? {
                    v.push(b);
                }
                Ok(Bulk(v))
            }
        }
        d.deserialize_byte_buf(BytesVisitor)
    }
}

/// The sink's protocol: a stream of numbered small messages, large ones,
/// and a report of what arrived.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Load {
    Small {
        n: u64,
    },
    Big(Bulk),
    /// Answered with `[small, big, small out of order]`.
    Report(ActorRef<Vec<u64>>),
}

/// Counts what arrives; checks that the small messages come in order.
#[derive(Default)]
pub struct Sink {
    small: u64,
    big: u64,
    next: u64,
    out_of_order: u64,
}

impl Actor for Sink {
    type Msg = Load;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Load) -> HandleResult {
        match msg {
            Load::Small { n } => {
                if n != self.next {
                    self.out_of_order += 1;
                }
                self.next = n + 1;
                self.small += 1;
            }
            Load::Big(_) => self.big += 1,
            Load::Report(to) => to.tell(vec![self.small, self.big, self.out_of_order]),
        }
        Ok(())
    }
}

/// A job's work item, for workers spawned on the peer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Work {
    pub id: u32,
    pub input: u64,
    pub reply_to: ActorRef<JobMsg>,
}

/// A task with this input is never answered: the job cannot finish while
/// its worker lives.
pub const NEVER: u64 = u64::MAX;

/// What a master receives: results from remote workers (and, locally,
/// the job to run).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum JobMsg {
    Run {
        tasks: Vec<(u32, u64)>,
        reply_to: ActorRef<Result<u64, String>>,
    },
    Done {
        id: u32,
        result: u64,
    },
}

/// Squares its input, except for [`NEVER`].
pub struct Worker;

impl Actor for Worker {
    type Msg = Work;
    fn handle(&mut self, _ctx: &mut Context<Self>, w: Work) -> HandleResult {
        if w.input != NEVER {
            w.reply_to.tell(JobMsg::Done {
                id: w.id,
                result: w.input * w.input,
            });
        }
        Ok(())
    }
}

/// The test protocol of `common` plus this module's types, registered
/// alike in the test and in the peer.
pub fn registry() -> Registry {
    let mut r = common::registry();
    r.register::<Load>(LOAD_ID).unwrap();
    r.register::<Work>(WORK_ID).unwrap();
    r.register::<JobMsg>(JOB_ID).unwrap();
    r.spawnable::<Sink, ()>("sink", |()| Sink::default())
        .unwrap();
    r.spawnable::<Worker, ()>("worker", |()| Worker).unwrap();
    r
}

/// The failure detector with `interval_ms` between heartbeats and
/// `pause_ms` of tolerated silence.
pub fn detector(interval_ms: u64, pause_ms: u64) -> FailureDetectorSettings {
    FailureDetectorSettings {
        heartbeat_interval: Duration::from_millis(interval_ms),
        acceptable_heartbeat_pause: Duration::from_millis(pause_ms),
        ..FailureDetectorSettings::default()
    }
}

/// The reconnect back-off of both sides unless a test says otherwise.
pub const BACKOFF_MS: u64 = 50;
pub const BACKOFF_MAX_MS: u64 = 400;

/// Settings for either side: a short reconnect back-off, so that a
/// restarted peer is reached soon.
pub fn remote_settings(port: u16, fd: &FailureDetectorSettings) -> RemoteSettings {
    RemoteSettings {
        port,
        remote_spawn: true,
        reconnect_backoff: Duration::from_millis(BACKOFF_MS),
        reconnect_backoff_max: Duration::from_millis(BACKOFF_MAX_MS),
        failure_detector: fd.clone(),
        ..RemoteSettings::default()
    }
}

/// A node in this process with the peer registry. `names` are sinks
/// spawned before it listens, so nothing that arrives finds them missing.
pub async fn local_node(name: &str, remote: RemoteSettings, sinks: &[&str]) -> Node {
    try_local_node(name, remote, sinks).await.unwrap()
}

/// As [`local_node`], or why its remoting did not start (its system is
/// then terminated).
#[allow(dead_code)] // not every binary that has this module uses it
pub async fn try_local_node(
    name: &str,
    remote: RemoteSettings,
    sinks: &[&str],
) -> Result<Node, volley_remote::transport::StartError> {
    let settings = Settings {
        io_threads: 2,
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(name, settings).unwrap();
    for sink in sinks {
        system.spawn(sink, Props::new(Sink::default)).unwrap();
    }
    match Remoting::start_with(&system, registry(), remote).await {
        Ok(remoting) => Ok(Node { system, remoting }),
        Err(e) => {
            system.terminate().await;
            Err(e)
        }
    }
}

/// A port nobody listens on right now, outside the kernel's ephemeral
/// range (see `common::free_port`): peers here are killed and restarted
/// on the same port while other tests' connections take ephemeral ports.
#[allow(unused_imports)] // not every binary that has this module uses it
pub use crate::common::free_port;

/// Records what a test node's watcher sees.
#[derive(Clone)]
pub struct Seen<T>(Arc<Mutex<Vec<(Instant, T)>>>);

impl<T> Default for Seen<T> {
    fn default() -> Self {
        Seen(Arc::new(Mutex::new(Vec::new())))
    }
}

impl<T: Clone> Seen<T> {
    pub fn push(&self, t: T) {
        self.0.lock().unwrap().push((Instant::now(), t));
    }

    pub fn all(&self) -> Vec<(Instant, T)> {
        self.0.lock().unwrap().clone()
    }

    /// What was recorded, without the times.
    pub fn values(&self) -> Vec<T> {
        self.all().into_iter().map(|(_, t)| t).collect()
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Subscribes a recorder of `RemotingEvent`s on `system`.
pub fn record_events(system: &ActorSystem) -> Seen<RemotingEvent> {
    struct Recorder(Seen<RemotingEvent>);
    impl Actor for Recorder {
        type Msg = RemotingEvent;
        fn handle(&mut self, _ctx: &mut Context<Self>, e: RemotingEvent) -> HandleResult {
            self.0.push(e);
            Ok(())
        }
    }
    let seen = Seen::default();
    let recorded = seen.clone();
    let recorder = system
        .spawn_anonymous(Props::new(move || Recorder(recorded.clone())))
        .unwrap();
    system.event_stream().subscribe(recorder);
    seen
}

pub enum WatcherMsg {
    Watch(AnyRef),
    Ping(ActorRef<u32>),
}

/// Watches what it is told to, and records each `Terminated` as
/// `path#uid`.
pub struct Watcher(pub Seen<String>);

impl Actor for Watcher {
    type Msg = WatcherMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: WatcherMsg) -> HandleResult {
        match msg {
            WatcherMsg::Watch(target) => ctx.watch(&target),
            WatcherMsg::Ping(to) => to.tell(1),
        }
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.0.push(format!("{}#{}", t.actor.path(), t.actor.uid()));
        Ok(())
    }
}

/// A watcher on `system` and what it records.
pub fn spawn_watcher(system: &ActorSystem) -> (ActorRef<WatcherMsg>, Seen<String>) {
    let seen = Seen::default();
    let recorded = seen.clone();
    let watcher = system
        .spawn_anonymous(Props::new(move || Watcher(recorded.clone())))
        .unwrap();
    (watcher, seen)
}

/// Panics on the runtime's own threads (dispatchers, I/O, tokio workers)
/// are recorded here by [`watch_panics`]; a test's own assertions run on
/// its test thread and are not.
static RUNTIME_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

pub fn watch_panics() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("");
            if name.starts_with("volley-") || name.starts_with("tokio-") {
                RUNTIME_PANICS
                    .lock()
                    .unwrap()
                    .push(format!("{name}: {info}"));
            }
            previous(info);
        }));
    });
}

pub fn runtime_panics() -> Vec<String> {
    RUNTIME_PANICS.lock().unwrap().clone()
}

/// Waits until `done` holds, for at most `limit`.
pub async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs a test body within `limit`; past it the body is dropped (its
/// peers killed by their guards) and the test fails.
pub async fn bounded(limit: Duration, body: impl std::future::Future<Output = ()>) {
    if tokio::time::timeout(limit, body).await.is_err() {
        panic!("the test ran longer than {limit:?}");
    }
}
