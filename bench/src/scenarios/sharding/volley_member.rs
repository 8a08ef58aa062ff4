//! `volley-bench sharding-node`: one volley cluster member for
//! `sharding`, speaking the lines and commands of the Pekko peer's
//! `sharding-node` (bench/peers/README.md, "sharding") that volley can
//! serve today: the cluster lines, `ping-singleton`, `leave`, `exit`. It
//! runs the cluster singleton with the settings Pekko's side has in force
//! (identification and hand-over retries every second, the hand-over
//! margin equal to the resolver's stable-after, as Pekko derives it from
//! its split-brain resolver). The sharded commands (`run`, `check`,
//! `shards`, `reset`, `stop-load`) answer an `unsupported` line until
//! volley's sharding region exists.

use std::io::BufRead;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Settings};
use volley_cluster::singleton::{register_singleton_types, ClusterSingleton, SingletonSettings};
use volley_cluster::Cluster;
use volley_remote::{Registry, Remoting};

use crate::scenarios::cluster::volley_member::{emit, settings_fields, Args, EventPrinter};

/// The hidden subcommand that runs one member.
pub const NODE_COMMAND: &str = "sharding-node";

/// The actor system's name, the same on every member (and Pekko's).
const SYSTEM: &str = "cluster-bench";
/// The wire ids of the singleton's protocol (two ids) and of the pings.
const SINGLETON_TYPE_IDS: u32 = 50;
const PING_TYPE_ID: u32 = 60;
const PORT_TYPE_ID: u32 = 61;
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

/// The sharding flags the driver passes before the cluster's; reported
/// on the `started` line, used once the region exists.
fn split_sharding_flags(
    args: &[String],
) -> crate::Result<(Map<String, serde_json::Value>, Vec<String>)> {
    let mut flags = Map::new();
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let key = match a.as_str() {
            "--shards" => "shards",
            "--rebalance-ms" => "rebalance_interval_ms",
            "--absolute-limit" => "rebalance_absolute_limit",
            "--relative-limit" => "rebalance_relative_limit",
            _ => {
                rest.push(a.clone());
                continue;
            }
        };
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        flags.insert(key.into(), json!(value));
    }
    Ok((flags, rest))
}

/// The member's body: starts, obeys stdin until `exit` or its end, then
/// terminates the system. Exits the process once the system has
/// terminated, whatever stopped it.
pub fn serve(args: &[String]) -> crate::Result<()> {
    let (flags, rest) = split_sharding_flags(args)?;
    let args = Args::parse(&rest)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (system, cluster, singleton) = rt.block_on(start(&args, flags))?;
    let watched = system.clone();
    let own = format!("127.0.0.1:{}", args.port);
    rt.spawn(async move {
        watched.when_terminated().await;
        let mut fields = Map::new();
        fields.insert("node".into(), json!(own));
        emit("terminated", fields);
        std::process::exit(0);
    });
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        match line.trim() {
            "ping-singleton" => {
                rt.spawn(ping(singleton.proxy().clone()));
            }
            "leave" => {
                if let Err(e) = cluster.leave() {
                    eprintln!("{NODE_COMMAND}: leave refused: {e}");
                }
            }
            "exit" => break,
            "" => {}
            other => {
                let mut fields = Map::new();
                fields.insert("command".into(), json!(other));
                emit("unsupported", fields);
            }
        }
    }
    rt.block_on(system.terminate());
    rt.block_on(std::future::pending::<()>());
    Ok(())
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

/// Starts the system, remoting, cluster, event printer and singleton;
/// prints `started`.
async fn start(
    args: &Args,
    flags: Map<String, serde_json::Value>,
) -> crate::Result<(ActorSystem, Cluster, ClusterSingleton<Ping>)> {
    let settings = Settings {
        io_threads: 1,
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(SYSTEM, settings)?;
    let mut registry = Registry::default();
    register_singleton_types(&mut registry, SINGLETON_TYPE_IDS)?;
    registry.register::<Ping>(PING_TYPE_ID)?;
    registry.register::<u64>(PORT_TYPE_ID)?;
    let remoting = Remoting::start_with(&system, registry, args.remote()).await?;
    let printer = system.spawn_anonymous(Props::new(|| EventPrinter))?;
    system.event_stream().subscribe(printer);
    let settings = args.cluster();
    let mut fields = Map::new();
    fields.insert("node".into(), json!(format!("127.0.0.1:{}", args.port)));
    fields.insert("pid".into(), json!(std::process::id()));
    fields.extend(settings_fields(&settings));
    let cluster = Cluster::start(&system, &remoting, settings)?;
    let mut singleton_settings = SingletonSettings::new("bench-singleton");
    singleton_settings.down_removal_margin = args.stable_after;
    fields.insert(
        "singleton_down_removal_margin_ms".into(),
        json!(args.stable_after.as_millis() as u64),
    );
    fields.extend(flags);
    let port = u64::from(args.port);
    let singleton = ClusterSingleton::start(
        &system,
        &remoting,
        singleton_settings,
        Props::new(move || Singleton { port }),
    )?;
    emit("started", fields);
    Ok((system, cluster, singleton))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharding_flags_are_taken_out_before_the_clusters() {
        let args: Vec<String> = ["--shards", "100", "--port", "1", "--relative-limit", "0.1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (flags, rest) = split_sharding_flags(&args).unwrap();
        assert_eq!(flags["shards"], "100");
        assert_eq!(flags["rebalance_relative_limit"], "0.1");
        assert_eq!(rest, vec!["--port".to_string(), "1".to_string()]);
        assert!(split_sharding_flags(&["--shards".to_string()]).is_err());
    }
}
