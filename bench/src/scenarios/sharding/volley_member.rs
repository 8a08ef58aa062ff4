//! `volley-bench sharding-node`: one volley cluster member for
//! `sharding`, speaking the lines and commands of the Pekko peer's
//! `sharding-node` (bench/peers/README.md, "sharding"). It runs the
//! counting entity `counter` through `ClusterSharding::init_on_cluster`
//! with the settings the driver passes (shards, rebalance interval and
//! limits; no passivation, no remembered entities, as Pekko's side), and
//! the cluster singleton with the settings Pekko's side has in force
//! (identification and hand-over retries every second, the hand-over
//! margin equal to the resolver's stable-after, as Pekko derives it from
//! its split-brain resolver).
//!
//! One difference: `shards` answers with this member's own shards only
//! (volley's sharding has no cluster-wide stats query yet), counted from
//! its live entities, and says so with `"scope":"local"`; the driver asks
//! every member and adds the lines up.

use std::io::BufRead;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Settings};
use volley_cluster::sharding::{
    register_sharding_types, ClusterSharding, Entity, EntityTypeKey, HashShards,
    LeastShardAllocation, ShardEnvelope, Sharding, ShardingSettings,
};
use volley_cluster::singleton::{register_singleton_types, ClusterSingleton, SingletonSettings};
use volley_cluster::{Cluster, ClusterEvent};
use volley_remote::{Registry, Remoting};

use super::volley_book::{Add, Book, Counter, Reply};
use super::volley_command::Command;
use super::volley_load::{self, StopFlag};
use crate::scenarios::cluster::volley_member::{emit, settings_fields, Args, EventPrinter};

/// The hidden subcommand that runs one member.
pub const NODE_COMMAND: &str = "sharding-node";

/// The actor system's name, the same on every member (and Pekko's).
const SYSTEM: &str = "cluster-bench";
/// The sharded entity type (Pekko's side calls it the same).
const ENTITY_TYPE: &str = "counter";
/// The wire ids of the singleton's protocol (two ids), the pings, the
/// sharding protocol (two ids), the entity's envelope and its replies.
const SINGLETON_TYPE_IDS: u32 = 50;
const PING_TYPE_ID: u32 = 60;
const PORT_TYPE_ID: u32 = 61;
const SHARDING_TYPE_IDS: u32 = 62;
const ENVELOPE_TYPE_ID: u32 = 64;
const REPLY_TYPE_ID: u32 = 65;
/// How often the driver member pings the singleton, and how long a ping
/// may go unanswered (as the Pekko peer's).
const PING_EVERY: Duration = Duration::from_millis(50);
const PING_TIMEOUT: Duration = Duration::from_millis(500);

/// A ping to the singleton: it answers the port of its member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ping {
    pub reply_to: ActorRef<u64>,
}

/// The singleton instance.
struct Singleton {
    port: u64,
}

impl Actor for Singleton {
    type Msg = Ping;
    fn handle(&mut self, _ctx: &mut Context<Self>, ping: Ping) -> HandleResult {
        ping.reply_to.tell(self.port);
        Ok(())
    }
}

/// Terminates the system once this member has left, as Pekko's
/// coordinated shutdown does after a leave: the leaver's entities stop
/// with it and its process exits. On its own `removed` at once; on its
/// own `exiting`, after [`EXIT_GRACE`], in case the removal is not seen
/// here.
struct ExitOnLeave {
    port: u16,
    runtime: tokio::runtime::Handle,
}

/// How long an exiting member waits for its removal before it stops.
const EXIT_GRACE: Duration = Duration::from_secs(5);

impl Actor for ExitOnLeave {
    type Msg = ClusterEvent;
    fn handle(&mut self, ctx: &mut Context<Self>, event: ClusterEvent) -> HandleResult {
        let (member, grace) = match &event {
            ClusterEvent::MemberRemoved { member, .. } => (member, Duration::ZERO),
            ClusterEvent::MemberExited { member } => (member, EXIT_GRACE),
            _ => return Ok(()),
        };
        if member.unique_address().port == self.port {
            let system = ctx.system().clone();
            self.runtime.spawn(async move {
                tokio::time::sleep(grace).await;
                system.terminate().await;
            });
        }
        Ok(())
    }
}

/// The sharding flags the driver passes before the cluster's, with the
/// Pekko peer's defaults.
#[derive(Debug, Clone, PartialEq)]
struct ShardingFlags {
    shards: u32,
    rebalance_ms: u64,
    absolute_limit: usize,
    relative_limit: f64,
}

impl Default for ShardingFlags {
    fn default() -> Self {
        ShardingFlags {
            shards: 100,
            rebalance_ms: 2_000,
            absolute_limit: 20,
            relative_limit: 0.1,
        }
    }
}

impl ShardingFlags {
    /// The sharding flags, and the rest of `args` (the cluster's).
    fn split(args: &[String]) -> crate::Result<(ShardingFlags, Vec<String>)> {
        let mut flags = ShardingFlags::default();
        let mut rest = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let known = [
                "--shards",
                "--rebalance-ms",
                "--absolute-limit",
                "--relative-limit",
            ];
            if !known.contains(&a.as_str()) {
                rest.push(a.clone());
                continue;
            }
            let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
            let bad = || format!("{a}: not a number: {value:?}");
            match a.as_str() {
                "--shards" => flags.shards = value.parse().map_err(|_| bad())?,
                "--rebalance-ms" => flags.rebalance_ms = value.parse().map_err(|_| bad())?,
                "--absolute-limit" => flags.absolute_limit = value.parse().map_err(|_| bad())?,
                _ => flags.relative_limit = value.parse().map_err(|_| bad())?,
            }
        }
        Ok((flags, rest))
    }

    /// The settings of the entity type: Pekko's defaults but for the
    /// driver's flags; no passivation (the default).
    /// `VOLLEY_BENCH_SHARDING_BATCH=<messages>,<bytes>` sets the
    /// batches between regions (to compare limits; the default is
    /// volley's).
    fn settings(&self) -> crate::Result<ShardingSettings> {
        let mut settings = ShardingSettings {
            rebalance_interval: Duration::from_millis(self.rebalance_ms),
            allocation: LeastShardAllocation::new(self.absolute_limit, self.relative_limit)
                .map_err(|e| format!("rebalance limits: {e}"))?,
            ..ShardingSettings::default()
        };
        if let Ok(batch) = std::env::var("VOLLEY_BENCH_SHARDING_BATCH") {
            let limits = batch
                .split_once(',')
                .and_then(|(messages, bytes)| Some((messages.parse().ok()?, bytes.parse().ok()?)));
            let bad = || format!("VOLLEY_BENCH_SHARDING_BATCH is not <messages>,<bytes>: {batch}");
            (settings.remote_batch_messages, settings.remote_batch_bytes) =
                limits.ok_or_else(bad)?;
        }
        Ok(settings)
    }

    /// The `started` line's sharding fields, named as Pekko's.
    fn fields(&self, settings: &ShardingSettings) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("shards".into(), json!(self.shards));
        let interval = settings.rebalance_interval.as_millis() as u64;
        fields.insert("rebalance_interval_ms".into(), json!(interval));
        fields.insert(
            "rebalance_absolute_limit".into(),
            json!(self.absolute_limit),
        );
        let relative = self.relative_limit.to_string();
        fields.insert("rebalance_relative_limit".into(), json!(relative));
        fields.insert("passivation".into(), json!("none"));
        fields.insert("remember_entities".into(), json!("off"));
        let batch = (settings.remote_batch_messages, settings.remote_batch_bytes);
        fields.insert("remote_batch".into(), json!(batch));
        fields
    }
}

/// What the commands work on.
struct Member {
    system: ActorSystem,
    cluster: Cluster,
    singleton: ClusterSingleton<Ping>,
    sharding: Sharding<Add>,
    extractor: HashShards,
    book: Arc<Book>,
    /// `127.0.0.1:<port>`.
    node: String,
    /// The running load's stop flag.
    load: Mutex<Option<StopFlag>>,
}

/// The member's body: starts, obeys stdin until `exit` or its end, then
/// terminates the system. Exits the process once the system has
/// terminated, whatever stopped it.
pub fn serve(args: &[String]) -> crate::Result<()> {
    let (flags, rest) = ShardingFlags::split(args)?;
    let args = Args::parse(&rest)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let member = rt.block_on(start(&args, &flags))?;
    let watched = member.system.clone();
    let own = member.node.clone();
    rt.spawn(async move {
        watched.when_terminated().await;
        let mut fields = Map::new();
        fields.insert("node".into(), json!(own));
        emit("terminated", fields);
        std::process::exit(0);
    });
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        if line.trim().is_empty() {
            continue;
        }
        match Command::parse(&line) {
            Ok(Command::Exit) => break,
            Ok(command) => obey(&member, &rt, command),
            Err(e) => {
                let mut fields = Map::new();
                fields.insert("command".into(), json!(line.trim()));
                fields.insert("error".into(), json!(e.to_string()));
                emit("error", fields);
            }
        }
    }
    rt.block_on(member.system.terminate());
    rt.block_on(std::future::pending::<()>());
    Ok(())
}

/// One stdin command (every one but `exit`).
fn obey(member: &Member, rt: &tokio::runtime::Runtime, command: Command) {
    match command {
        Command::Run(spec) => {
            let stop = StopFlag::default();
            *member.load.lock().unwrap_or_else(PoisonError::into_inner) = Some(stop.clone());
            let sharding = member.sharding.clone();
            rt.spawn(async move { emit("row", volley_load::run(sharding, spec, stop).await) });
        }
        Command::StopLoad => {
            if let Some(stop) = &*member.load.lock().unwrap_or_else(PoisonError::into_inner) {
                stop.store(true, Relaxed);
            }
        }
        Command::Reset => {
            member.book.reset();
            emit("reset", Map::new());
        }
        Command::Check { expected, ids } => emit("check", member.book.check(expected, ids)),
        Command::Shards => emit("shards", shards_line(member)),
        Command::PingSingleton => {
            rt.spawn(ping(member.singleton.proxy().clone()));
        }
        Command::Leave => {
            if let Err(e) = member.cluster.leave() {
                eprintln!("{NODE_COMMAND}: leave refused: {e}");
            }
        }
        Command::Exit => {}
    }
}

/// `shards`: this member's region, when it hosts live entities, as
/// "host:port=shards"; `scope` says the line covers this member only.
fn shards_line(member: &Member) -> Map<String, Value> {
    let hosted = member.book.shards(&member.extractor).len();
    let regions: Vec<String> = match hosted {
        0 => Vec::new(),
        n => vec![format!("{}={n}", member.node)],
    };
    let mut fields = Map::new();
    fields.insert("regions".into(), json!(regions));
    fields.insert("failed".into(), json!(0));
    fields.insert("scope".into(), json!("local"));
    fields
}

/// Pings the singleton every [`PING_EVERY`]; prints a `singleton` line
/// each time the answering member changes.
async fn ping(proxy: ActorRef<Ping>) {
    let mut every = tokio::time::interval(PING_EVERY);
    let mut last = None;
    loop {
        every.tick().await;
        let Ok(port) = proxy.ask(|reply_to| Ping { reply_to }, PING_TIMEOUT).await else {
            continue;
        };
        if last != Some(port) {
            last = Some(port);
            let mut fields = Map::new();
            fields.insert("port".into(), json!(port));
            emit("singleton", fields);
        }
    }
}

/// The wire types of every member, with the same ids everywhere.
fn registry() -> crate::Result<Registry> {
    let mut registry = Registry::default();
    register_singleton_types(&mut registry, SINGLETON_TYPE_IDS)?;
    registry.register::<Ping>(PING_TYPE_ID)?;
    registry.register::<u64>(PORT_TYPE_ID)?;
    register_sharding_types(&mut registry, SHARDING_TYPE_IDS)?;
    registry.register::<ShardEnvelope<Add>>(ENVELOPE_TYPE_ID)?;
    registry.register::<Reply>(REPLY_TYPE_ID)?;
    Ok(registry)
}

/// Starts the system, remoting, cluster, event printer, singleton and
/// sharding; prints `started`.
async fn start(args: &Args, flags: &ShardingFlags) -> crate::Result<Member> {
    let settings = Settings {
        io_threads: 1,
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(SYSTEM, settings)?;
    let remoting = Remoting::start_with(&system, registry()?, args.remote()).await?;
    let printer = system.spawn_anonymous(Props::new(|| EventPrinter))?;
    system.event_stream().subscribe(printer);
    let (port, runtime) = (args.port, tokio::runtime::Handle::current());
    let exit = system.spawn_anonymous(Props::new(move || ExitOnLeave {
        port,
        runtime: runtime.clone(),
    }))?;
    system.event_stream().subscribe(exit);
    let settings = args.cluster();
    let node = format!("127.0.0.1:{}", args.port);
    let mut fields = Map::new();
    fields.insert("node".into(), json!(node));
    fields.insert("pid".into(), json!(std::process::id()));
    fields.extend(settings_fields(&settings));
    let cluster = Cluster::start(&system, &remoting, settings)?;
    let mut singleton_settings = SingletonSettings::new("bench-singleton");
    singleton_settings.down_removal_margin = args.stable_after;
    fields.insert(
        "singleton_down_removal_margin_ms".into(),
        json!(args.stable_after.as_millis() as u64),
    );
    let port = u64::from(args.port);
    let singleton = ClusterSingleton::start(
        &system,
        &remoting,
        singleton_settings,
        Props::new(move || Singleton { port }),
    )?;
    let sharding_settings = flags.settings()?;
    fields.extend(flags.fields(&sharding_settings));
    let extractor = HashShards::new(flags.shards)?;
    let book = Arc::new(Book::default());
    let entity_book = book.clone();
    let key = EntityTypeKey::<Add>::new(ENTITY_TYPE);
    let entity = Entity::new(key, move |id| {
        let (id, book) = (id.to_owned(), entity_book.clone());
        Props::new(move || Counter::new(&id, book.clone()))
    })
    .with_extractor(extractor, flags.shards)
    .with_settings(sharding_settings);
    let sharding = ClusterSharding::init_on_cluster(&system, &remoting, entity)?;
    emit("started", fields);
    Ok(Member {
        system,
        cluster,
        singleton,
        sharding,
        extractor,
        book,
        node,
        load: Mutex::new(None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharding_flags_are_taken_out_before_the_clusters() {
        let args: Vec<String> = ["--shards", "50", "--port", "1", "--relative-limit", "0.2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (flags, rest) = ShardingFlags::split(&args).unwrap();
        assert_eq!((flags.shards, flags.relative_limit), (50, 0.2));
        assert_eq!(flags.rebalance_ms, ShardingFlags::default().rebalance_ms);
        assert_eq!(rest, vec!["--port".to_string(), "1".to_string()]);
        assert!(ShardingFlags::split(&["--shards".to_string()]).is_err());
        assert!(ShardingFlags::split(&["--shards".to_string(), "x".to_string()]).is_err());
    }

    #[test]
    fn the_started_line_names_the_settings_as_pekkos() {
        let flags = ShardingFlags::default();
        let settings = flags.settings().unwrap();
        let fields = flags.fields(&settings);
        assert_eq!(fields["rebalance_interval_ms"], 2000);
        assert_eq!(fields["rebalance_relative_limit"], "0.1");
        assert_eq!(fields["passivation"], "none");
        let zero = ShardingFlags {
            absolute_limit: 0,
            ..flags
        };
        assert!(zero.settings().is_err());
    }

    #[test]
    fn every_wire_type_has_its_own_id() {
        registry().expect("no id taken twice");
    }
}
