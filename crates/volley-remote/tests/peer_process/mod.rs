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
        heartbeat_interval_ms: interval_ms,
        acceptable_heartbeat_pause_ms: pause_ms,
        ..FailureDetectorSettings::default()
    }
}

/// Settings for either side: a short reconnect back-off, so that a
/// restarted peer is reached soon.
pub fn remote_settings(port: u16, fd: &FailureDetectorSettings) -> RemoteSettings {
    RemoteSettings {
        port,
        remote_spawn: true,
        reconnect_backoff_ms: 50,
        reconnect_backoff_max_ms: 400,
        failure_detector: fd.clone(),
        ..RemoteSettings::default()
    }
}

/// A node in this process with the peer registry. `names` are sinks
/// spawned before it listens, so nothing that arrives finds them missing.
pub async fn local_node(name: &str, remote: RemoteSettings, sinks: &[&str]) -> Node {
    let settings = Settings {
        io_threads: 2,
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(name, settings).unwrap();
    for sink in sinks {
        system.spawn(sink, Props::new(Sink::default)).unwrap();
    }
    let remoting = Remoting::start_with(&system, registry(), remote)
        .await
        .unwrap();
    Node { system, remoting }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// How a peer starts.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// 0: any free port.
    pub port: u16,
    pub interval_ms: u64,
    pub pause_ms: u64,
    /// The test's node: the peer counts the samples in which it judges it
    /// unreachable.
    pub parent: Option<Address>,
    /// Sinks under `/user` besides `sink`.
    pub extra_sinks: Vec<String>,
}

impl PeerConfig {
    pub fn new(interval_ms: u64, pause_ms: u64) -> Self {
        PeerConfig {
            port: 0,
            interval_ms,
            pause_ms,
            parent: None,
            extra_sinks: Vec::new(),
        }
    }

    fn encode(&self) -> String {
        let mut s = format!(
            "port={};interval={};pause={};sinks={}",
            self.port,
            self.interval_ms,
            self.pause_ms,
            self.extra_sinks.join(",")
        );
        if let Some(p) = &self.parent {
            s.push_str(&format!(";parent={p}"));
        }
        s
    }

    fn decode(s: &str) -> Self {
        let kv: HashMap<&str, &str> = s.split(';').filter_map(|p| p.split_once('=')).collect();
        PeerConfig {
            port: kv["port"].parse().unwrap(),
            interval_ms: kv["interval"].parse().unwrap(),
            pause_ms: kv["pause"].parse().unwrap(),
            parent: kv.get("parent").map(|p| p.parse().unwrap()),
            extra_sinks: kv["sinks"]
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        }
    }
}

/// Prints the remoting events the peer sees; at a `Shutdown`
/// disassociation, asks the sink what had arrived by then.
struct EventPrinter {
    sink: ActorRef<Load>,
    at_shutdown: ActorRef<Vec<u64>>,
}

impl Actor for EventPrinter {
    type Msg = RemotingEvent;
    fn handle(&mut self, _ctx: &mut Context<Self>, event: RemotingEvent) -> HandleResult {
        say(&format!("EVENT {}", describe(&event)));
        if let RemotingEvent::Disassociated {
            reason: volley_remote::DisassociationReason::Shutdown,
            ..
        } = event
        {
            // Queued behind everything already delivered to the sink.
            self.sink.tell(Load::Report(self.at_shutdown.clone()));
        }
        Ok(())
    }
}

/// One line per event, with the addresses as they are written in paths.
pub fn describe(event: &RemotingEvent) -> String {
    match event {
        RemotingEvent::Associated { remote, uid } => format!("Associated {remote} uid={uid}"),
        RemotingEvent::Disassociated { remote, reason } => {
            format!("Disassociated {remote} reason={reason}")
        }
        RemotingEvent::Quarantined {
            remote,
            uid,
            reason,
        } => format!("Quarantined {remote} uid={uid} reason={reason}"),
        RemotingEvent::AddressTerminated {
            remote,
            uid,
            reason,
        } => format!("AddressTerminated {remote} uid={uid:?} reason={reason}"),
    }
}

/// Keeps a line per dead letter (the peer's tests expect few).
struct DeadLetterRecorder(Seen<String>);

impl Actor for DeadLetterRecorder {
    type Msg = DeadLetter;
    fn handle(&mut self, _ctx: &mut Context<Self>, d: DeadLetter) -> HandleResult {
        self.0.push(format!(
            "{} to {} ({:?})",
            d.message_type, d.recipient, d.reason
        ));
        Ok(())
    }
}

struct Printer(&'static str);

impl Actor for Printer {
    type Msg = Vec<u64>;
    fn handle(&mut self, _ctx: &mut Context<Self>, v: Vec<u64>) -> HandleResult {
        let v: Vec<String> = v.iter().map(u64::to_string).collect();
        say(&format!("{} {}", self.0, v.join(" ")));
        Ok(())
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The peer process's body, run by each test binary's `peer_process`
/// test; returns at once unless [`PEER_ENV`] is set.
pub async fn run_peer() {
    let Ok(config) = std::env::var(PEER_ENV) else {
        return;
    };
    let config = PeerConfig::decode(&config);
    log_capture::install();
    tokio::spawn(async {
        tokio::time::sleep(PEER_LIFETIME).await;
        eprintln!("peer: lived {PEER_LIFETIME:?} without being told to quit");
        std::process::exit(3);
    });
    let fd = detector(config.interval_ms, config.pause_ms);
    let mut sinks = vec!["sink"];
    sinks.extend(config.extra_sinks.iter().map(String::as_str));
    let node = local_node("peer", remote_settings(config.port, &fd), &sinks).await;
    let sink = node
        .system
        .lookup("/user/sink")
        .unwrap()
        .unwrap()
        .downcast::<Load>()
        .unwrap();
    let at_shutdown = node
        .system
        .spawn_anonymous(Props::new(|| Printer("AT_SHUTDOWN")))
        .unwrap();
    let printer = {
        let sink = sink.clone();
        node.system
            .spawn_anonymous(Props::new(move || EventPrinter {
                sink: sink.clone(),
                at_shutdown: at_shutdown.clone(),
            }))
            .unwrap()
    };
    node.system.event_stream().subscribe(printer);
    let dead_letters: Seen<String> = Seen::default();
    let recorder = {
        let dead_letters = dead_letters.clone();
        node.system
            .spawn_anonymous(Props::new(move || DeadLetterRecorder(dead_letters.clone())))
            .unwrap()
    };
    node.system.event_stream().subscribe(recorder);
    let unreachable_samples = Arc::new(AtomicU64::new(0));
    if let Some(parent) = config.parent.clone() {
        let remoting = node.remoting.clone();
        let count = unreachable_samples.clone();
        tokio::spawn(async move {
            loop {
                if remoting.is_reachable(&parent) == Some(false) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
    }
    say(&format!("ADDRESS {}", node.remoting.address()));
    say(&format!("UID {}", node.remoting.uid()));

    let (tx, mut commands) = mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    while let Some(command) = commands.recv().await {
        match command.as_str() {
            "report" => {
                let r = sink.ask(Load::Report, common::T).await.unwrap();
                say(&format!(
                    "REPORT {} {} {} {}",
                    r[0],
                    r[1],
                    r[2],
                    node.system.dead_letter_count()
                ));
            }
            "unreachable" => say(&format!(
                "UNREACHABLE {}",
                unreachable_samples.load(Ordering::Relaxed)
            )),
            "dead letters" => {
                for d in dead_letters.values() {
                    say(&format!("DEAD {d}"));
                }
                say("DEAD_END");
            }
            "logs" => {
                for e in log_capture::events(|e| e.level <= Level::WARN) {
                    say(&format!("LOG {} {}", e.level, e.text.replace('\n', " ")));
                }
                say("LOGS_END");
            }
            "quit" => break,
            other => say(&format!("UNKNOWN {other}")),
        }
    }
    node.system.terminate().await;
}

/// A peer process, killed (SIGKILL) when dropped, so that no exit path of
/// a test, a panic included, leaves it running.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
    /// The `EVENT` lines read so far (while waiting for other lines).
    events: Vec<String>,
    pub address: Address,
    pub uid: u64,
}

impl Peer {
    /// Starts a peer and waits for its address.
    pub async fn start(config: &PeerConfig) -> Peer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "peer_process", "--nocapture"])
            .env(PEER_ENV, config.encode())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut peer = Peer {
            child,
            stdin,
            lines,
            events: Vec::new(),
            address: "volley://unknown@127.0.0.1:1".parse().unwrap(),
            uid: 0,
        };
        let limit = Duration::from_secs(30);
        peer.address = peer.line("ADDRESS ", limit).await.parse().unwrap();
        peer.uid = peer.line("UID ", limit).await.parse().unwrap();
        peer
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The rest of the next line that starts with `prefix`; other lines
    /// are skipped, the events among them kept for [`Peer::events`].
    pub async fn line(&mut self, prefix: &str, limit: Duration) -> String {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_string();
                    }
                    self.keep_event(line);
                }
                Ok(None) => panic!("the peer exited before printing {prefix:?}"),
                Err(_) => panic!("the peer printed no {prefix:?} within {limit:?}"),
            }
        }
    }

    /// Sends one command line.
    pub fn command(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().expect("the peer's stdin is open");
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    /// The peer's sink counts: `[small, big, out of order, dead letters]`.
    pub async fn report(&mut self) -> Vec<u64> {
        self.command("report");
        let line = self.line("REPORT ", Duration::from_secs(20)).await;
        line.split(' ').map(|n| n.parse().unwrap()).collect()
    }

    /// The peer's warnings and errors so far.
    pub async fn warnings(&mut self) -> Vec<String> {
        self.list("logs", "LOG ", "LOGS_END").await
    }

    /// The dead letters the peer counted, one line each.
    pub async fn dead_letters(&mut self) -> Vec<String> {
        self.list("dead letters", "DEAD ", "DEAD_END").await
    }

    /// The lines the peer answers `command` with, up to `end`.
    async fn list(&mut self, command: &str, prefix: &str, end: &str) -> Vec<String> {
        self.command(command);
        let mut items = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.recv())
                .await
                .unwrap_or_else(|_| panic!("the peer answers `{command}`"))
                .expect("the peer is alive");
            if line == end {
                return items;
            }
            if let Some(item) = line.strip_prefix(prefix) {
                items.push(item.to_string());
            } else {
                self.keep_event(line);
            }
        }
    }

    fn keep_event(&mut self, line: String) {
        if let Some(event) = line.strip_prefix("EVENT ") {
            self.events.push(event.to_string());
        }
    }

    /// The remoting events the peer printed before the last line read,
    /// as `describe` wrote them.
    pub fn events(&self) -> &[String] {
        &self.events
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `signal` (`STOP`, `CONT`) to the peer.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Asks the peer to terminate its system and waits for it to exit.
    pub async fn quit(mut self) {
        self.command("quit");
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the peer did not quit");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

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
