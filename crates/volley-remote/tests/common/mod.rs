//! Two actor systems on loopback, with the test protocol registered.
#![allow(dead_code)]

pub mod holding_relay;
pub mod relay;
pub mod tagged;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use volley::{
    Actor, ActorRef, ActorSystem, AnyRef, Context, HandleResult, Props, Settings, Terminated,
};

use volley_remote::{Registry, RemoteSettings, Remoting, RemotingEvent};
use volley_testkit::TestProbe;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Calc {
    Add {
        a: i64,
        b: i64,
        reply_to: ActorRef<i64>,
    },
    Seq {
        from: u32,
        n: u64,
    },
    Report(ActorRef<Vec<u64>>),
    Blob(Vec<u8>, ActorRef<i64>),
}

/// Adds numbers, checks per-sender ordering of `Seq`, and reports.
#[derive(Default)]
pub struct Calculator {
    next: Vec<u64>,
    out_of_order: u64,
    received: u64,
}

impl Actor for Calculator {
    type Msg = Calc;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Calc) -> HandleResult {
        match msg {
            Calc::Add { a, b, reply_to } => reply_to.tell(a + b),
            Calc::Seq { from, n } => {
                let from = from as usize;
                if self.next.len() <= from {
                    self.next.resize(from + 1, 0);
                }
                if self.next[from] != n {
                    self.out_of_order += 1;
                }
                self.next[from] = n + 1;
                self.received += 1;
            }
            Calc::Report(to) => to.tell(vec![self.received, self.out_of_order]),
            Calc::Blob(bytes, reply_to) => reply_to.tell(bytes.len() as i64),
        }
        Ok(())
    }
}

pub const CALC_ID: u32 = 100;
pub const SUM_ID: u32 = 101;
pub const REPORT_ID: u32 = 102;
pub const PING_ID: u32 = 103;
pub const PONG_ID: u32 = 104;

/// RemotePingPong's message: the echo answers `n` to `reply_to`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ping {
    pub n: u32,
    pub reply_to: ActorRef<u32>,
}

pub fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<Calc>(CALC_ID).unwrap();
    r.register::<i64>(SUM_ID).unwrap();
    r.register::<Vec<u64>>(REPORT_ID).unwrap();
    r.register::<u32>(PONG_ID).unwrap();
    r.register::<Ping>(PING_ID).unwrap();
    r.spawnable::<Calculator, ()>("calculator", |()| Calculator::default())
        .unwrap();
    r
}

pub struct Node {
    pub system: ActorSystem,
    pub remoting: Remoting,
}

pub async fn node(name: &str, remote: RemoteSettings) -> Node {
    node_with(name, node_settings(), remote).await
}

/// The system settings of a test node: the dispatcher kind under test,
/// and the thread counts `VOLLEY_NODE_THREADS` asks for.
pub fn node_settings() -> Settings {
    // VOLLEY_NODE_THREADS=dispatcher,io tunes the soak runs.
    let (workers, io) = std::env::var("VOLLEY_NODE_THREADS")
        .ok()
        .and_then(|v| {
            let (w, i) = v.split_once(',')?;
            Some((w.parse().ok()?, i.parse().ok()?))
        })
        .unwrap_or((0, 2));
    // The kind under test (`#[each_dispatcher]` runs a test on both).
    let kind = volley_testkit::DispatcherUnderTest::get();
    Settings {
        io_threads: io,
        default_dispatcher: volley::DispatcherSettings {
            kind,
            threads: workers,
            ..Default::default()
        },
        ..Settings::default()
    }
}

/// [`node_settings`] with the system's metrics on, sampled every 20 ms
/// (read them back with `volley_testkit::RecordedMetrics`).
pub fn metered() -> Settings {
    Settings {
        metrics: volley::MetricsSettings {
            enabled: true,
            sample_interval: Duration::from_millis(20),
        },
        ..node_settings()
    }
}

/// A node with system settings of the test's own.
pub async fn node_with(name: &str, settings: Settings, remote: RemoteSettings) -> Node {
    let system = ActorSystem::with_settings(name, settings).unwrap();
    let remoting = Remoting::start_with(&system, registry(), remote)
        .await
        .unwrap();
    Node { system, remoting }
}

pub fn spawn_calculator(node: &Node, name: &str) -> ActorRef<Calc> {
    node.system
        .spawn(name, Props::new(Calculator::default))
        .unwrap()
}

pub const T: Duration = Duration::from_secs(10);

/// `from`'s ref to the actor `name` under `/user` on node `to`.
pub fn remote_ref(from: &Node, to: &Node, name: &str) -> ActorRef<Calc> {
    from.remoting
        .resolve::<Calc>(&format!("{}/user/{name}", to.remoting.address()))
        .unwrap()
}

/// Asks `calc` for `a + b`.
pub async fn add(calc: &ActorRef<Calc>, a: i64, b: i64) -> i64 {
    calc.ask(|reply_to| Calc::Add { a, b, reply_to }, T)
        .await
        .unwrap()
}

/// A probe on the node's event stream: every [`RemotingEvent`] the node
/// publishes from now on, in order.
pub fn record_events(node: &Node) -> TestProbe<RemotingEvent> {
    TestProbe::on_event_stream(&node.system)
}

/// The events a [`record_events`] probe has received so far (each within a
/// short pause of the one before), for checks over the whole history:
/// counts and absences.
pub fn events_so_far(events: &TestProbe<RemotingEvent>) -> Vec<RemotingEvent> {
    events.receive_while(Duration::from_millis(200), |_| true)
}

/// Watches what it is told to and counts the `Terminated` it gets.
pub struct CountingWatcher(pub Arc<AtomicUsize>);

impl Actor for CountingWatcher {
    type Msg = AnyRef;
    fn handle(&mut self, ctx: &mut Context<Self>, target: AnyRef) -> HandleResult {
        ctx.watch(&target);
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A [`CountingWatcher`] named `name` on `system`, and its count.
pub fn spawn_counting_watcher(
    system: &ActorSystem,
    name: &str,
) -> (ActorRef<AnyRef>, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    let watcher = system
        .spawn(name, Props::new(move || CountingWatcher(counted.clone())))
        .unwrap();
    (watcher, count)
}

/// Passes every number it gets to the test.
pub struct Relay(pub tokio::sync::mpsc::UnboundedSender<i64>);

impl Actor for Relay {
    type Msg = i64;
    fn handle(&mut self, _ctx: &mut Context<Self>, n: i64) -> HandleResult {
        let _ = self.0.send(n);
        Ok(())
    }
}

/// Asks `calc` for 40 + 2 within `within`.
pub async fn ask_sum(calc: &ActorRef<Calc>, within: Duration) -> Result<i64, volley::AskError> {
    calc.ask(
        |reply_to| Calc::Add {
            a: 40,
            b: 2,
            reply_to,
        },
        within,
    )
    .await
}

/// Remote settings with heartbeats every 50 ms, for tests that wait on
/// the detector, the round trips or their metrics.
pub fn quick_heartbeats() -> RemoteSettings {
    RemoteSettings {
        failure_detector: volley_remote::transport::FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(50),
            ..Default::default()
        },
        ..RemoteSettings::default()
    }
}

/// Waits until `done` holds, failing the test after [`T`] (the
/// testkit's `eventually`, with this suite's limit).
pub async fn eventually(what: &str, done: impl FnMut() -> bool) {
    volley_testkit::eventually_within(T, what, done).await
}

/// Waits until `watched` has registered `n` watches by actors on
/// `watcher`'s node (`Remoting::incoming_watches`): a remote watch is in
/// place, or an unwatch has arrived, once the count says so.
pub fn await_incoming_watches(watched: &Node, watcher: &Node, n: usize) {
    let from = watcher.remoting.address();
    let what = format!(
        "{n} watches from {from} registered on {}",
        watched.remoting.address()
    );
    volley_testkit::await_cond(&what, || watched.remoting.incoming_watches(from) == n);
}

/// Heartbeats every 50 ms, a node given up after about half a second of
/// silence, reconnects from 50 ms (the watch suites' detector).
pub fn quick_detector() -> RemoteSettings {
    RemoteSettings {
        failure_detector: volley_remote::transport::FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(50),
            acceptable_heartbeat_pause: Duration::from_millis(400),
            ..Default::default()
        },
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        ..RemoteSettings::default()
    }
}

/// A detector that gives a peer up only after two minutes of silence, for
/// suites that test order and loss under a flood, not detection: on a
/// loaded machine a debug build's heartbeats can be late by more than the
/// default pause, and a quarantine would end the flood half-way.
pub fn patient_detector() -> RemoteSettings {
    RemoteSettings {
        failure_detector: volley_remote::transport::FailureDetectorSettings {
            acceptable_heartbeat_pause: Duration::from_secs(120),
            ..Default::default()
        },
        ..RemoteSettings::default()
    }
}

/// [`quick_detector`] listening on `port`.
pub fn on_port(port: u16) -> RemoteSettings {
    RemoteSettings {
        port,
        ..quick_detector()
    }
}

/// A loopback port free a moment ago, for a node that is restarted on
/// the same port. Picked below Linux's ephemeral range (32768 and up):
/// a port the kernel handed out for `bind(0)` could be handed out again,
/// to another test's connection, between a node's stop and its restart.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new();
    for attempt in 0u64.. {
        let port = 20_000 + (random.hash_one(attempt) % 10_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    unreachable!("an unbounded loop")
}

/// The environment that gives a peer process (this test binary run again)
/// the dispatcher kind under test: outside a test it reads
/// `VOLLEY_TEST_DISPATCHER`.
pub fn dispatcher_env() -> (&'static str, &'static str) {
    let kind = match volley_testkit::DispatcherUnderTest::get() {
        volley::DispatcherKind::AppRuntime => "app-runtime",
        volley::DispatcherKind::WorkStealing => "work-stealing",
    };
    ("VOLLEY_TEST_DISPATCHER", kind)
}
