//! The node program: this test binary run again as one cluster member
//! (`--ignored --exact processes::cluster_node` with [`NODE_ENV`] set).
//! It prints `SELF <host>:<port>#<uid>`, one `EVENT <kind> <member>` line
//! per cluster event, `SHUTDOWN <reason>` when coordinated shutdown begins,
//! `TERMINATED` once the system has terminated (by itself too: a downed
//! node does), and one line per answered command on stdout, logs on
//! stderr, and reads commands from stdin (see [`Command`]). It exits when
//! stdin closes, so a test that dies leaves no node behind.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use volley::{
    Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Settings, ShutdownStarted,
    Terminated,
};
use volley_cluster::sharding::{register_sharding_types, ShardEnvelope};
use volley_cluster::singleton::{register_singleton_types, ClusterSingleton};
use volley_cluster::{Cluster, ClusterEvent, UniqueAddress};
use volley_remote::{Registry, Remoting};

use super::config::{address, NodeConfig, NODE_ENV, SYSTEM};
use super::entities::{ShardCommand, ShardedNode};
use super::singleton;
use crate::log_capture;

/// A node never told to exit stops on its own after this long.
const LIFETIME: Duration = Duration::from_secs(120);

/// The messages the nodes send each other: numbers, counted by `sink`,
/// the singleton's and sharding's protocols, and numbers to entities.
pub fn registry() -> Registry {
    let mut registry = Registry::default();
    registry.register::<u64>(1).expect("a fresh registry");
    register_singleton_types(&mut registry, 50).expect("free ids");
    register_sharding_types(&mut registry, 60).expect("free ids");
    registry
        .register::<ShardEnvelope<u64>>(62)
        .expect("a free id");
    registry
}

/// What the test tells a node, one per line.
#[derive(Debug)]
enum Command {
    /// `leave`: a graceful leave.
    Leave,
    /// `down <port> <uid>`: downs that member.
    Down(UniqueAddress),
    /// `watch <port>`: watches `/user/sink` on that node.
    Watch(u16),
    /// `send <port> <n>`: tells that node's sink `n` numbers.
    Send(u16, u64),
    /// `count`: answered with `COUNT <numbers received>`.
    Count,
    /// `watched-by <port>`: answered with `WATCHED <n>`, the watches that
    /// node has of actors here.
    WatchedBy(u16),
    /// `flood <port> <n>`: sends that node `n` malformed SWIM packets of
    /// 1 KiB, answered with `FLOODED <sent> <dropped at this end>`.
    Flood(u16, u64),
    /// `counts`: answered with `COUNTS <refused inputs> <inbound queue
    /// drops> <frames refused over the inbound rate> <frames delivered>
    /// <packets refused from another formation>`.
    Counts,
    /// `single <n>`: tells the singleton `n` numbers through this
    /// node's proxy.
    Single(u64),
    /// `single-count`: answered with `SINGLE <numbers the instances on
    /// this node received>`.
    SingleCount,
    /// `shard-...`: the sharding commands (`entities.rs`).
    Shard(ShardCommand),
    /// `exit`: terminates the system and the process.
    Exit,
}

impl Command {
    fn parse(line: &str) -> Option<Command> {
        let words: Vec<&str> = line.split_whitespace().collect();
        Some(match words.as_slice() {
            ["leave"] => Command::Leave,
            ["down", port, uid] => Command::Down(UniqueAddress {
                host: "127.0.0.1".into(),
                port: port.parse().ok()?,
                uid: uid.parse().ok()?,
            }),
            ["watch", port] => Command::Watch(port.parse().ok()?),
            ["send", port, n] => Command::Send(port.parse().ok()?, n.parse().ok()?),
            ["count"] => Command::Count,
            ["watched-by", port] => Command::WatchedBy(port.parse().ok()?),
            ["flood", port, n] => Command::Flood(port.parse().ok()?, n.parse().ok()?),
            ["counts"] => Command::Counts,
            ["single", n] => Command::Single(n.parse().ok()?),
            ["single-count"] => Command::SingleCount,
            ["exit"] => Command::Exit,
            words => Command::Shard(ShardCommand::parse(words)?),
        })
    }
}

pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Counts the numbers it receives.
struct Sink(Arc<AtomicU64>);

impl Actor for Sink {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, _n: u64) -> HandleResult {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Prints each cluster event as `EVENT <kind> <member>`.
struct EventPrinter;

impl Actor for EventPrinter {
    type Msg = ClusterEvent;
    fn handle(&mut self, _ctx: &mut Context<Self>, event: ClusterEvent) -> HandleResult {
        say(&format!("EVENT {}", describe(&event)));
        Ok(())
    }
}

/// `<kind> <member>`, the member as `host:port#uid`.
pub fn describe(event: &ClusterEvent) -> String {
    let (kind, member) = match event {
        ClusterEvent::MemberJoined { member } => ("Joined", member),
        ClusterEvent::MemberWeaklyUp { member } => ("WeaklyUp", member),
        ClusterEvent::MemberUp { member } => ("Up", member),
        ClusterEvent::MemberLeft { member } => ("Left", member),
        ClusterEvent::MemberExited { member } => ("Exited", member),
        ClusterEvent::MemberDowned { member } => ("Downed", member),
        ClusterEvent::MemberRemoved { member, .. } => ("Removed", member),
        ClusterEvent::UnreachableMember { member } => ("Unreachable", member),
        ClusterEvent::ReachableMember { member } => ("Reachable", member),
        ClusterEvent::LeaderChanged { leader } => {
            let leader = leader.as_ref().map_or("none".to_owned(), |l| l.to_string());
            return format!("Leader {leader}");
        }
        ClusterEvent::RoleLeaderChanged { role, leader } => {
            let leader = leader.as_ref().map_or("none".to_owned(), |l| l.to_string());
            return format!("RoleLeader {role} {leader}");
        }
        ClusterEvent::CurrentClusterState { state } => {
            return format!("State {} members", state.members.len());
        }
    };
    format!("{kind} {}", member.unique_address())
}

/// Prints `SHUTDOWN <reason>` when coordinated shutdown begins.
struct ShutdownPrinter;

impl Actor for ShutdownPrinter {
    type Msg = ShutdownStarted;
    fn handle(&mut self, _ctx: &mut Context<Self>, started: ShutdownStarted) -> HandleResult {
        say(&format!("SHUTDOWN {:?}", started.reason));
        Ok(())
    }
}

/// Watches the sinks it is given; prints `TERMINATED <path>` for each end.
struct Watcher;

impl Actor for Watcher {
    type Msg = ActorRef<u64>;
    fn handle(&mut self, ctx: &mut Context<Self>, target: ActorRef<u64>) -> HandleResult {
        ctx.watch(&target);
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        say(&format!("TERMINATED {}", t.actor.path()));
        Ok(())
    }
}

/// The running node: what its commands act on.
struct Node {
    system: ActorSystem,
    remoting: Remoting,
    cluster: Cluster,
    watcher: ActorRef<ActorRef<u64>>,
    received: Arc<AtomicU64>,
    singleton: Option<ClusterSingleton<u64>>,
    single_received: Arc<AtomicU64>,
    sharded: Option<ShardedNode>,
}

/// The node process's body; returns at once unless [`NODE_ENV`] is set.
pub async fn run_node() {
    let Ok(config) = std::env::var(NODE_ENV) else {
        return;
    };
    let config = NodeConfig::decode(&config);
    log_capture::install_to_stderr(log_level());
    tokio::spawn(async {
        tokio::time::sleep(LIFETIME).await;
        eprintln!("node: lived {LIFETIME:?} without being told to exit");
        std::process::exit(3);
    });
    let node = start(&config).await;
    say(&format!("SELF {}", node.cluster.self_member()));
    let mut commands = stdin_lines();
    while let Some(line) = commands.recv().await {
        match Command::parse(&line) {
            Some(Command::Exit) => break,
            Some(command) => node.obey(command),
            None => say(&format!("ERR unknown command {line:?}")),
        }
    }
    node.system.terminate().await;
    say("EXITED");
    std::process::exit(0);
}

/// The nodes' log level: `RUST_LOG` when it is a plain level (`debug`,
/// `trace`, ...), to see what a failure's transcript does not show;
/// `info` otherwise.
fn log_level() -> tracing::Level {
    std::env::var("RUST_LOG")
        .ok()
        .and_then(|level| level.parse().ok())
        .unwrap_or(tracing::Level::INFO)
}

async fn start(config: &NodeConfig) -> Node {
    let settings = Settings {
        io_threads: 1,
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(SYSTEM, settings).expect("a system");
    let received = Arc::new(AtomicU64::new(0));
    let counted = received.clone();
    system
        .spawn("sink", Props::new(move || Sink(counted.clone())))
        .expect("the sink");
    let remoting = Remoting::start_with(&system, registry(), config.remote())
        .await
        .expect("remoting starts");
    let printer = system
        .spawn_anonymous(Props::new(|| EventPrinter))
        .expect("the printer");
    system.event_stream().subscribe(printer);
    let shutdown = system
        .spawn_anonymous(Props::new(|| ShutdownPrinter))
        .expect("the shutdown printer");
    system.event_stream().subscribe(shutdown);
    let terminated = system.clone();
    tokio::spawn(async move {
        terminated.when_terminated().await;
        say("TERMINATED");
    });
    let watcher = system
        .spawn_anonymous(Props::new(|| Watcher))
        .expect("the watcher");
    let cluster = Cluster::start(&system, &remoting, config.cluster()).expect("a cluster");
    let single_received = Arc::new(AtomicU64::new(0));
    let singleton = config
        .singleton
        .map(|margin| singleton::start(&system, &remoting, config.port, margin, &single_received));
    let sharded = config
        .sharding
        .map(|margin| ShardedNode::start(&system, &remoting, config.port, margin));
    Node {
        system,
        remoting,
        cluster,
        watcher,
        received,
        singleton,
        single_received,
        sharded,
    }
}

impl Node {
    fn obey(&self, command: Command) {
        let done = format!("{command:?}");
        let outcome = match command {
            Command::Leave => self.cluster.leave().map_err(|e| e.to_string()),
            Command::Down(member) => self.cluster.down(member).map_err(|e| e.to_string()),
            Command::Watch(port) => self.sink_at(port).map(|sink| self.watcher.tell(sink)),
            Command::Send(port, n) => self.sink_at(port).map(|sink| {
                for i in 0..n {
                    sink.tell(i);
                }
                say(&format!("SENT {port} {n}"));
            }),
            Command::Count => {
                say(&format!("COUNT {}", self.received.load(Ordering::Relaxed)));
                Ok(())
            }
            Command::WatchedBy(port) => {
                let watches = address(port)
                    .parse()
                    .map(|from| self.remoting.incoming_watches(&from))
                    .map_err(|e| format!("{e:?}"));
                watches.map(|n| say(&format!("WATCHED {n}")))
            }
            Command::Flood(port, n) => self.flood(port, n),
            Command::Counts => {
                let frames = self.remoting.cluster_frame_counts();
                say(&format!(
                    "COUNTS {} {} {} {} {}",
                    self.cluster.refused_inputs(),
                    self.cluster.inbound_dropped(),
                    frames.refused_rate_limited,
                    frames.delivered,
                    self.cluster.refused_other_formation()
                ));
                Ok(())
            }
            Command::Single(n) => match &self.singleton {
                Some(singleton) => {
                    (0..n).for_each(|i| singleton.proxy().tell(i));
                    Ok(())
                }
                None => Err("this node runs no singleton".to_owned()),
            },
            Command::SingleCount => {
                say(&format!(
                    "SINGLE {}",
                    self.single_received.load(Ordering::Relaxed)
                ));
                Ok(())
            }
            Command::Shard(command) => match &self.sharded {
                Some(sharded) => sharded.obey(command),
                None => Err("this node runs no sharding".to_owned()),
            },
            Command::Exit => Ok(()),
        };
        match outcome {
            Ok(()) => say(&format!("OK {done}")),
            Err(e) => say(&format!("ERR {done}: {e}")),
        }
    }

    fn flood(&self, port: u16, n: u64) -> Result<(), String> {
        let to: volley_remote::wire::Address =
            address(port).parse().map_err(|e| format!("{e:?}"))?;
        let uid = self
            .remoting
            .incarnation_of(&to)
            .ok_or_else(|| format!("no association with {to}"))?;
        let garbage = [0xA5u8; 1024];
        let swim = volley_remote::wire::ClusterChannel::Swim;
        let sent = (0..n)
            .filter(|_| self.remoting.send_cluster(&to, uid, swim, &garbage).is_ok())
            .count() as u64;
        say(&format!("FLOODED {sent} {}", n - sent));
        Ok(())
    }

    fn sink_at(&self, port: u16) -> Result<ActorRef<u64>, String> {
        self.remoting
            .resolve::<u64>(&format!("{}/user/sink", address(port)))
            .map_err(|e| e.to_string())
    }
}

/// The lines of stdin, read on a thread of their own; the channel closes
/// with stdin.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}
