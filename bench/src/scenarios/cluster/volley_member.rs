//! `volley-bench cluster-node`: one volley cluster member, speaking the
//! same lines and commands as the Pekko peer's `cluster-node`
//! (bench/peers/README.md, "cluster"), so that one driver measures both.
//!
//! Timings map onto SWIM as follows: Pekko's heartbeat interval is
//! volley's `probe_period`, and its acceptable heartbeat pause is
//! `suspect_to_down_after` (how long a silent member may stay silent
//! before it is unreachable); `stable_after`, the strategy
//! (keep-majority), and the gossip and leader-action intervals (1 s) are
//! the same names on both sides. `probe_rtt` stays at its default, half
//! the probe period.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use volley::{
    Actor, ActorRef, ActorSystem, Context, HandleResult, Listing, Props, ServiceKey, Settings,
};
use volley_cluster::{Cluster, ClusterEvent, ClusterSettings, MemberRecord};
use volley_remote::{Registry, RemoteSettings, Remoting};

use super::view::now_ms;

/// The hidden subcommand that runs one member.
pub const NODE_COMMAND: &str = "cluster-node";

/// The actor system's name, the same on every member.
const SYSTEM: &str = "cluster-bench";

/// The wire id of the service's message type.
const SERVICE_TYPE_ID: u32 = 1;

/// The wire id of a stream's numbers.
const NUMBER_TYPE_ID: u32 = 2;

/// How often a stream sends its next number (as the Pekko peer's).
const STREAM_EVERY: Duration = Duration::from_millis(5);

/// The receptionist key `register` registers a service under.
fn service_key() -> ServiceKey<String> {
    ServiceKey::new("bench-service")
}

/// What the driver passes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Args {
    pub(crate) port: u16,
    bind_port: Option<u16>,
    seeds: Vec<String>,
    heartbeat: Duration,
    pause: Duration,
    pub(crate) stable_after: Duration,
}

impl Args {
    pub(crate) fn parse(args: &[String]) -> crate::Result<Args> {
        let mut parsed = Args {
            port: 0,
            bind_port: None,
            seeds: Vec::new(),
            heartbeat: Duration::from_secs(1),
            pause: Duration::from_secs(3),
            stable_after: Duration::from_secs(7),
        };
        let ms = |v: &str| v.parse::<u64>().map(Duration::from_millis);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
            match a.as_str() {
                "--port" => parsed.port = value.parse()?,
                "--bind-port" => parsed.bind_port = Some(value.parse()?),
                "--seeds" => {
                    parsed.seeds = value
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|hp| format!("volley://{SYSTEM}@{hp}"))
                        .collect()
                }
                "--heartbeat-ms" => parsed.heartbeat = ms(value)?,
                "--pause-ms" => parsed.pause = ms(value)?,
                "--stable-after-ms" => parsed.stable_after = ms(value)?,
                other => return Err(format!("{NODE_COMMAND}: unknown argument {other}").into()),
            }
        }
        if parsed.port == 0 {
            return Err(format!("{NODE_COMMAND}: --port is required").into());
        }
        Ok(parsed)
    }

    pub(crate) fn remote(&self) -> RemoteSettings {
        RemoteSettings {
            port: self.bind_port.unwrap_or(self.port),
            canonical_port: self.bind_port.map(|_| self.port),
            ..RemoteSettings::default()
        }
    }

    pub(crate) fn cluster(&self) -> ClusterSettings {
        let mut settings = ClusterSettings {
            name: "cluster-bench".into(),
            seed_nodes: self.seeds.clone(),
            gossip_interval: Duration::from_secs(1),
            leader_actions_interval: Duration::from_secs(1),
            ..ClusterSettings::default()
        };
        settings.swim.probe_period = self.heartbeat;
        settings.swim.probe_rtt = self.heartbeat / 2;
        settings.swim.suspect_to_down_after = Some(self.pause);
        settings.split_brain_resolver.active_strategy = "keep-majority".into();
        settings.split_brain_resolver.stable_after = Some(self.stable_after);
        settings
    }
}

/// The settings of the `started` line.
pub(crate) fn settings_fields(settings: &ClusterSettings) -> Map<String, Value> {
    let ms = |d: Duration| json!(d.as_millis() as u64);
    let sbr = &settings.split_brain_resolver;
    let mut fields = Map::new();
    fields.insert("probe_period_ms".into(), ms(settings.swim.probe_period));
    fields.insert("probe_rtt_ms".into(), ms(settings.swim.probe_rtt));
    fields.insert(
        "suspect_to_down_after_ms".into(),
        settings.swim.suspect_to_down_after.map_or(Value::Null, ms),
    );
    fields.insert(
        "stable_after_ms".into(),
        sbr.stable_after.map_or(Value::Null, ms),
    );
    fields.insert("strategy".into(), json!(sbr.active_strategy));
    fields.insert("gossip_interval_ms".into(), ms(settings.gossip_interval));
    fields.insert(
        "leader_actions_interval_ms".into(),
        ms(settings.leader_actions_interval),
    );
    fields
}

/// Stdout, one line at a time from any thread.
static OUT: Mutex<()> = Mutex::new(());

/// Prints one event line: `t_ms`, `event`, then `fields`.
pub(crate) fn emit(event: &str, fields: Map<String, Value>) {
    let mut line = Map::new();
    line.insert("t_ms".into(), json!(now_ms()));
    line.insert("event".into(), json!(event));
    line.extend(fields);
    let _guard = OUT.lock();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", Value::Object(line));
    let _ = out.flush();
}

fn member_field(member: &MemberRecord) -> Map<String, Value> {
    let a = member.unique_address();
    let mut fields = Map::new();
    fields.insert("member".into(), json!(format!("{}:{}", a.host, a.port)));
    fields
}

/// The line of a cluster event, as the Pekko peer names it.
fn describe(event: &ClusterEvent) -> (&'static str, Map<String, Value>) {
    match event {
        ClusterEvent::MemberJoined { member } => ("joining", member_field(member)),
        // The Pekko peer prints no line for it; the view ignores this one.
        ClusterEvent::MemberWeaklyUp { member } => ("weakly-up", member_field(member)),
        ClusterEvent::MemberUp { member } => ("up", member_field(member)),
        ClusterEvent::MemberLeft { member } => ("leaving", member_field(member)),
        ClusterEvent::MemberExited { member } => ("exiting", member_field(member)),
        ClusterEvent::MemberDowned { member } => ("down", member_field(member)),
        ClusterEvent::MemberRemoved { member, .. } => ("removed", member_field(member)),
        ClusterEvent::UnreachableMember { member } => ("unreachable", member_field(member)),
        ClusterEvent::ReachableMember { member } => ("reachable", member_field(member)),
        ClusterEvent::LeaderChanged { leader } => {
            let member = leader
                .as_ref()
                .map_or(Value::Null, |l| json!(format!("{}:{}", l.host, l.port)));
            let mut fields = Map::new();
            fields.insert("member".into(), member);
            ("leader", fields)
        }
        ClusterEvent::RoleLeaderChanged { role, leader } => {
            let member = leader
                .as_ref()
                .map_or(Value::Null, |l| json!(format!("{}:{}", l.host, l.port)));
            let mut fields = Map::new();
            fields.insert("role".into(), json!(role));
            fields.insert("member".into(), member);
            ("role-leader", fields)
        }
        // Told only to a snapshot subscriber; this printer listens on the
        // event stream and never gets one.
        ClusterEvent::CurrentClusterState { state } => {
            let mut fields = Map::new();
            fields.insert("members".into(), json!(state.members.len()));
            ("state", fields)
        }
    }
}

/// Prints every cluster event.
pub(crate) struct EventPrinter;

impl Actor for EventPrinter {
    type Msg = ClusterEvent;
    fn handle(&mut self, _ctx: &mut Context<Self>, event: ClusterEvent) -> HandleResult {
        let (name, fields) = describe(&event);
        emit(name, fields);
        Ok(())
    }
}

/// Prints every listing of the service: how many members hold one, and
/// which.
struct ListingPrinter {
    own: String,
}

impl Actor for ListingPrinter {
    type Msg = Listing<String>;
    fn handle(&mut self, _ctx: &mut Context<Self>, listing: Listing<String>) -> HandleResult {
        let mut nodes: Vec<String> = listing
            .services
            .iter()
            .map(|s| s.path().authority().map_or(self.own.clone(), str::to_owned))
            .collect();
        nodes.sort();
        nodes.dedup();
        let mut fields = Map::new();
        fields.insert("count".into(), json!(nodes.len()));
        fields.insert("nodes".into(), json!(nodes));
        emit("listing", fields);
        Ok(())
    }
}

/// Keeps the distinct numbers it is sent: `/user/sink`, where streams go.
struct Sink(Arc<Mutex<HashSet<u64>>>);

impl Actor for Sink {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, n: u64) -> HandleResult {
        if let Ok(mut seen) = self.0.lock() {
            seen.insert(n);
        }
        Ok(())
    }
}

/// Ignores what it is sent: the registered service.
struct Ignore;

impl Actor for Ignore {
    type Msg = String;
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: String) -> HandleResult {
        Ok(())
    }
}

/// The member's body: starts, obeys stdin until `exit` or its end, then
/// terminates the system (a graceful leave first). Exits the process once
/// the system has terminated, whatever stopped it (a downing too).
pub fn serve(args: &[String]) -> crate::Result<()> {
    let args = Args::parse(args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let member = rt.block_on(start(&args))?;
    let watched = member.system.clone();
    let own = format!("127.0.0.1:{}", args.port);
    rt.spawn(async move {
        watched.when_terminated().await;
        let mut fields = Map::new();
        fields.insert("node".into(), json!(own));
        emit("terminated", fields);
        std::process::exit(0);
    });
    let mut stream: Option<tokio::task::JoinHandle<()>> = None;
    let sent = Arc::new(AtomicU64::new(0));
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["register"] => register(&member.system)?,
            ["leave"] => {
                if let Err(e) = member.cluster.leave() {
                    eprintln!("{NODE_COMMAND}: leave refused: {e}");
                }
            }
            ["stream", host_port] => {
                let to = member
                    .remoting
                    .resolve::<u64>(&format!("volley://{SYSTEM}@{host_port}/user/sink"))?;
                sent.store(0, Ordering::SeqCst);
                let _enter = rt.enter();
                stream = Some(tokio::spawn(send_numbers(to, sent.clone())));
            }
            ["stop"] => {
                if let Some(task) = stream.take() {
                    task.abort();
                    let _ = rt.block_on(task);
                }
                emit("sent", count_field(sent.load(Ordering::SeqCst)));
            }
            ["received"] => {
                let count = member.received.lock().map_or(0, |seen| seen.len() as u64);
                emit("received", count_field(count));
            }
            ["exit"] => break,
            [] => {}
            _ => eprintln!("{NODE_COMMAND}: unknown command {line}"),
        }
    }
    rt.block_on(member.system.terminate());
    // The terminated line and the exit come from the task above.
    rt.block_on(std::future::pending::<()>());
    Ok(())
}

/// Tells `to` 0, 1, 2, ... every [`STREAM_EVERY`], counting in `sent`.
async fn send_numbers(to: ActorRef<u64>, sent: Arc<AtomicU64>) {
    let mut every = tokio::time::interval(STREAM_EVERY);
    loop {
        every.tick().await;
        to.tell(sent.load(Ordering::SeqCst));
        sent.fetch_add(1, Ordering::SeqCst);
    }
}

pub(crate) fn count_field(count: u64) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("count".into(), json!(count));
    fields
}

/// A running member: what its commands act on.
struct Member {
    system: ActorSystem,
    remoting: Remoting,
    cluster: Cluster,
    /// The distinct numbers `/user/sink` got.
    received: Arc<Mutex<HashSet<u64>>>,
}

/// Starts the system, its remoting and cluster, and the printers; prints
/// `started`.
async fn start(args: &Args) -> crate::Result<Member> {
    let settings = Settings {
        io_threads: 1,
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(SYSTEM, settings)?;
    let mut registry = Registry::default();
    registry.register::<String>(SERVICE_TYPE_ID)?;
    registry.register::<u64>(NUMBER_TYPE_ID)?;
    let received = Arc::new(Mutex::new(HashSet::new()));
    let seen = received.clone();
    system.spawn("sink", Props::new(move || Sink(seen.clone())))?;
    let remoting = Remoting::start_with(&system, registry, args.remote()).await?;
    let printer = system.spawn_anonymous(Props::new(|| EventPrinter))?;
    system.event_stream().subscribe(printer);
    let own = format!("127.0.0.1:{}", args.port);
    let listings = {
        let own = own.clone();
        system.spawn_anonymous(Props::new(move || ListingPrinter { own: own.clone() }))?
    };
    system.receptionist()?.subscribe(&service_key(), listings);
    let settings = args.cluster();
    let mut fields = Map::new();
    fields.insert("node".into(), json!(own));
    fields.insert("pid".into(), json!(std::process::id()));
    fields.extend(settings_fields(&settings));
    let cluster = Cluster::start(&system, &remoting, settings)?;
    emit("started", fields);
    Ok(Member {
        system,
        remoting,
        cluster,
        received,
    })
}

/// Spawns a service and registers it under [`service_key`].
fn register(system: &ActorSystem) -> crate::Result<()> {
    let service = system.spawn_anonymous(Props::new(|| Ignore))?;
    system.receptionist()?.register(&service_key(), &service);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_the_drivers_arguments_and_maps_the_timings() {
        let args = Args::parse(&strings(&[
            "--port",
            "2551",
            "--seeds",
            "127.0.0.1:2551,127.0.0.1:2552",
            "--heartbeat-ms",
            "1000",
            "--pause-ms",
            "3000",
            "--stable-after-ms",
            "7000",
            "--bind-port",
            "3551",
        ]))
        .unwrap();
        assert_eq!(args.seeds[1], "volley://cluster-bench@127.0.0.1:2552");
        let remote = args.remote();
        assert_eq!((remote.port, remote.canonical_port), (3551, Some(2551)));
        let cluster = args.cluster();
        assert_eq!(cluster.swim.probe_period, Duration::from_secs(1));
        assert_eq!(
            cluster.swim.suspect_to_down_after,
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            cluster.split_brain_resolver.stable_after,
            Some(Duration::from_secs(7))
        );
        cluster.validate().unwrap();
        let fields = settings_fields(&cluster);
        assert_eq!(fields["suspect_to_down_after_ms"], 3000);
        assert_eq!(fields["strategy"], "keep-majority");
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert!(Args::parse(&strings(&["--colour", "red"])).is_err());
        assert!(Args::parse(&strings(&["--port"])).is_err());
        assert!(Args::parse(&strings(&["--seeds", "127.0.0.1:1"])).is_err());
    }
}
