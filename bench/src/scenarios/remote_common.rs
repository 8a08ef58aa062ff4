//! What the remote scenarios share: the protocol (RemotePingPong's `Ping`,
//! kontraktor's two-number `Calc`), the actors on the server node, and the
//! two nodes themselves — both in this process, or the server half in a
//! child process (`volley-bench remote-server`, hidden) that prints its
//! address on stdout and serves until its stdin closes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use volley::{Actor, ActorRef, ActorSystem, Context, DispatcherSettings, HandleResult, Settings};
use volley_remote::transport::BatchingSettings;
use volley_remote::transport::TlsSettings;
use volley_remote::wire::Address;
use volley_remote::{Registry, RemoteSettings, Remoting};

use crate::report::remote_rows::Setup;

/// The hidden subcommand that runs the server half.
pub const SERVER_COMMAND: &str = "remote-server";

/// RemotePingPong's message: the echo answers `n` to `reply_to`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ping {
    pub n: u32,
    pub reply_to: ActorRef<u32>,
}

/// kontraktor's test: two numbers, added by the receiver.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Calc {
    /// Fire and forget: the adder counts it and adds to its sum.
    Add { a: i64, b: i64 },
    /// Request: the adder answers the sum.
    Sum {
        a: i64,
        b: i64,
        reply_to: ActorRef<i64>,
    },
    /// Answers (messages counted, sum of all `Add`s) and resets both.
    Report(ActorRef<Counts>),
    /// Answers (requests counted, sum of all `Sum`s) and resets both: the
    /// receiver's side of the ask check (`volley-bench kontraktor`).
    AskReport(ActorRef<Counts>),
}

/// What the adder counted: (Add messages, their sum).
pub type Counts = (u64, i64);

pub const PING_ID: u32 = 1001;
pub const PONG_ID: u32 = 1002;
pub const CALC_ID: u32 = 1003;
pub const SUM_ID: u32 = 1004;
pub const COUNTS_ID: u32 = 1005;

/// Echoes every ping to its `reply_to`.
pub struct Echo;

impl Actor for Echo {
    type Msg = Ping;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Ping) -> HandleResult {
        msg.reply_to.tell(msg.n);
        Ok(())
    }
}

/// Adds; counts fire-and-forget messages, and requests apart from them.
#[derive(Default)]
pub struct Adder {
    count: u64,
    sum: i64,
    asked: u64,
    asked_sum: i64,
}

impl Actor for Adder {
    type Msg = Calc;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Calc) -> HandleResult {
        match msg {
            Calc::Add { a, b } => {
                self.count += 1;
                self.sum = self.sum.wrapping_add(a + b);
            }
            Calc::Sum { a, b, reply_to } => {
                self.asked += 1;
                self.asked_sum = self.asked_sum.wrapping_add(a + b);
                reply_to.tell(a + b);
            }
            Calc::Report(to) => {
                to.tell((self.count, self.sum));
                (self.count, self.sum) = (0, 0);
            }
            Calc::AskReport(to) => {
                to.tell((self.asked, self.asked_sum));
                (self.asked, self.asked_sum) = (0, 0);
            }
        }
        Ok(())
    }
}

/// The protocol, the same on both nodes; `echo` and `adder` are spawnable.
/// Every message type is registered direct (`remote_direct.rs`): the same
/// bytes as through serde, without serde. With `VOLLEY_BENCH_SERDE=1` in
/// the environment (a child process inherits it) they are registered the
/// serde way instead, to measure that path.
pub fn registry() -> Registry {
    let mut r = Registry::default();
    if std::env::var_os("VOLLEY_BENCH_SERDE").is_some_and(|v| v == "1") {
        r.register::<Ping>(PING_ID).expect("fresh id");
        r.register::<u32>(PONG_ID).expect("fresh id");
        r.register::<Calc>(CALC_ID).expect("fresh id");
        r.register::<i64>(SUM_ID).expect("fresh id");
        r.register::<Counts>(COUNTS_ID).expect("fresh id");
    } else {
        r.register_direct::<Ping>(PING_ID).expect("fresh id");
        r.register_direct::<u32>(PONG_ID).expect("fresh id");
        r.register_direct::<Calc>(CALC_ID).expect("fresh id");
        r.register_direct::<i64>(SUM_ID).expect("fresh id");
        r.register_direct::<Counts>(COUNTS_ID).expect("fresh id");
    }
    r.spawnable::<Echo, ()>("echo", |()| Echo)
        .expect("fresh kind");
    r.spawnable::<Adder, ()>("adder", |()| Adder::default())
        .expect("fresh kind");
    r
}

/// Threads per actor system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Default dispatcher threads.
    pub dispatcher: usize,
    /// Tokio I/O threads (the transport's readers and writers).
    pub io: usize,
    /// Dispatcher idle spin (µs) before parking; `None` keeps volley's
    /// default.
    pub idle_spin_us: Option<u64>,
    /// `[metrics] enabled` on the nodes in this process.
    pub metrics: bool,
}

impl Layout {
    /// The default: 2 dispatcher threads and 1 I/O thread per system, the
    /// best of the layouts tried on the 2-core benchmark machine
    /// (docs/design-notes.md#benchmark-layout-2-dispatcher-threads-and-1-io-thread-per-node).
    pub const DEFAULT: Layout = Layout {
        dispatcher: 2,
        io: 1,
        idle_spin_us: None,
        metrics: false,
    };

    pub fn from_cli(cli: &crate::cli::Cli) -> Self {
        Layout {
            dispatcher: cli.dispatcher_threads.unwrap_or(Self::DEFAULT.dispatcher),
            io: cli.io_threads.unwrap_or(Self::DEFAULT.io),
            idle_spin_us: cli.idle_spin_us,
            metrics: false,
        }
    }

    pub fn describe(&self) -> String {
        match self.idle_spin_us {
            None => format!("{}d+{}io", self.dispatcher, self.io),
            Some(us) => format!("{}d+{}io spin {us}us", self.dispatcher, self.io),
        }
    }

    /// The rows' record of how the nodes ran.
    pub fn setup(&self, two_processes: bool) -> Setup {
        Setup {
            processes: if two_processes { 2 } else { 1 },
            threads: self.describe(),
            tls: false,
        }
    }
}

/// One actor system with remoting.
pub struct Node {
    pub system: ActorSystem,
    pub remoting: Remoting,
}

/// Remote settings for a node: loopback, free port.
pub fn remote_settings(batching: bool, remote_spawn: bool) -> RemoteSettings {
    RemoteSettings {
        remote_spawn,
        batching: BatchingSettings {
            // One frame per write: batching off, for the comparison row.
            max_pending_writes: if batching {
                BatchingSettings::default().max_pending_writes
            } else {
                1
            },
            ..BatchingSettings::default()
        },
        ..RemoteSettings::default()
    }
}

/// Starts a node (awaiting on `rt`).
pub fn start_node(
    rt: &tokio::runtime::Runtime,
    name: &str,
    layout: Layout,
    remote: RemoteSettings,
) -> crate::Result<Node> {
    let settings = Settings {
        io_threads: layout.io,
        default_dispatcher: DispatcherSettings {
            threads: layout.dispatcher,
            idle_spin: layout
                .idle_spin_us
                .map(std::time::Duration::from_micros)
                .unwrap_or(DispatcherSettings::default().idle_spin),
            ..Default::default()
        },
        metrics: volley::MetricsSettings {
            enabled: layout.metrics,
            ..Default::default()
        },
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(name, settings)?;
    let remoting = rt.block_on(Remoting::start_with(&system, registry(), remote))?;
    Ok(Node { system, remoting })
}

/// Where the server node lives.
enum Server {
    InProcess(Node),
    Child {
        child: Child,
        /// Drains the child's stdout after the address line.
        _drain: std::thread::JoinHandle<()>,
    },
}

/// The client node A and the server node B (`remote_spawn` on).
pub struct Nodes {
    pub a: Node,
    pub b_address: Address,
    server: Server,
}

impl Nodes {
    /// Starts A here and B here or in a child process, with TLS on both
    /// when `tls` is given (in one process only: the child server takes no
    /// certificates).
    pub fn start_with(
        rt: &tokio::runtime::Runtime,
        layout: Layout,
        batching: bool,
        two_processes: bool,
        tls: Option<&TlsSettings>,
    ) -> crate::Result<Nodes> {
        if tls.is_some() && two_processes {
            return Err("TLS rows run in one process only".into());
        }
        let with_tls = |mut settings: RemoteSettings| {
            if let Some(tls) = tls {
                settings.tls = tls.clone();
            }
            settings
        };
        let a = start_node(
            rt,
            "bench-a",
            layout,
            with_tls(remote_settings(batching, false)),
        )?;
        let (b_address, server) = if two_processes {
            let (address, child, drain) = spawn_server(layout, batching)?;
            (
                address,
                Server::Child {
                    child,
                    _drain: drain,
                },
            )
        } else {
            let b = start_node(
                rt,
                "bench-b",
                layout,
                with_tls(remote_settings(batching, true)),
            )?;
            (b.remoting.address().clone(), Server::InProcess(b))
        };
        Ok(Nodes {
            a,
            b_address,
            server,
        })
    }

    /// Starts the nodes, runs `f` with them and stops them, also when `f`
    /// fails.
    pub fn run<T>(
        rt: &tokio::runtime::Runtime,
        layout: Layout,
        batching: bool,
        two_processes: bool,
        f: impl FnOnce(&Nodes) -> crate::Result<T>,
    ) -> crate::Result<T> {
        Nodes::run_with(rt, layout, batching, two_processes, None, f)
    }

    /// `run`, with TLS when `tls` is given.
    pub fn run_with<T>(
        rt: &tokio::runtime::Runtime,
        layout: Layout,
        batching: bool,
        two_processes: bool,
        tls: Option<&TlsSettings>,
        f: impl FnOnce(&Nodes) -> crate::Result<T>,
    ) -> crate::Result<T> {
        let nodes = Nodes::start_with(rt, layout, batching, two_processes, tls)?;
        let result = f(&nodes);
        nodes.stop(rt);
        result
    }

    /// Spawns an actor of `kind` on B from A.
    pub fn spawn_on_b<M: Send + 'static>(
        &self,
        rt: &tokio::runtime::Runtime,
        kind: &str,
    ) -> crate::Result<ActorRef<M>> {
        Ok(rt.block_on(self.a.remoting.spawn_remote::<M, ()>(
            &self.b_address,
            kind,
            None,
            &(),
            Duration::from_secs(10),
        ))?)
    }

    /// Dead letters on the nodes this process can see.
    pub fn dead_letters(&self) -> u64 {
        self.a.system.dead_letter_count()
            + match &self.server {
                Server::InProcess(b) => b.system.dead_letter_count(),
                Server::Child { .. } => 0,
            }
    }

    /// Stops both nodes (the child when its stdin closes).
    pub fn stop(self, rt: &tokio::runtime::Runtime) {
        self.a.remoting.shutdown();
        rt.block_on(self.a.system.terminate());
        match self.server {
            Server::InProcess(b) => {
                b.remoting.shutdown();
                rt.block_on(b.system.terminate());
            }
            Server::Child { mut child, .. } => {
                drop(child.stdin.take());
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Starts `volley-bench remote-server` and reads its address.
fn spawn_server(
    layout: Layout,
    batching: bool,
) -> crate::Result<(Address, Child, std::thread::JoinHandle<()>)> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg(SERVER_COMMAND)
        .args(["--dispatcher-threads", &layout.dispatcher.to_string()])
        .args(["--io-threads", &layout.io.to_string()])
        .args(
            layout
                .idle_spin_us
                .map(|us| ["--idle-spin-us".to_string(), us.to_string()])
                .into_iter()
                .flatten(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if !batching {
        cmd.arg("--no-batching");
    }
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    let drain = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(a) = line.strip_prefix("ADDRESS ") {
                let _ = tx.send(a.to_string());
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(address) => Ok((address.parse()?, child, drain)),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err("the remote-server process did not print its address".into())
        }
    }
}

/// `volley-bench remote-server [--dispatcher-threads D] [--io-threads I]
/// [--idle-spin-us US] [--no-batching]`: the server half of `--two-processes`.
pub fn serve(args: &[String]) -> crate::Result<()> {
    let mut layout = Layout::DEFAULT;
    let mut batching = true;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || -> crate::Result<usize> {
            Ok(it
                .next()
                .ok_or_else(|| format!("{a} needs a value"))?
                .parse()?)
        };
        match a.as_str() {
            "--dispatcher-threads" => layout.dispatcher = value()?,
            "--io-threads" => layout.io = value()?,
            "--idle-spin-us" => layout.idle_spin_us = Some(value()? as u64),
            "--no-batching" => batching = false,
            other => return Err(format!("remote-server: unknown argument {other}").into()),
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let b = start_node(&rt, "bench-b", layout, remote_settings(batching, true))?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ADDRESS {}", b.remoting.address())?;
        out.flush()?;
    }
    // Serve until the client closes our stdin.
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {
        line.clear();
    }
    b.remoting.shutdown();
    rt.block_on(b.system.terminate());
    Ok(())
}

/// An adder remote-spawned on node B, with what the rows need to say about
/// how the nodes ran: what remote-tell, remote-ask and remote-latency send
/// to.
pub struct AdderOnB<'a> {
    pub ctx: &'a crate::scenarios::Ctx,
    pub nodes: &'a Nodes,
    pub adder: ActorRef<Calc>,
    pub setup: Setup,
}

impl<'a> AdderOnB<'a> {
    /// Spawns the adder on B from A.
    pub fn spawn(
        ctx: &'a crate::scenarios::Ctx,
        nodes: &'a Nodes,
        layout: Layout,
    ) -> crate::Result<Self> {
        Ok(AdderOnB {
            ctx,
            nodes,
            adder: nodes.spawn_on_b(&ctx.rt, "adder")?,
            setup: layout.setup(ctx.cli.two_processes),
        })
    }
}

/// Asks the adder for its counts (they reset).
pub fn report(rt: &tokio::runtime::Runtime, adder: &ActorRef<Calc>) -> crate::Result<Counts> {
    Ok(rt.block_on(adder.ask(Calc::Report, Duration::from_secs(60)))?)
}

/// Asks the adder for its request counts (they reset).
pub fn ask_report(rt: &tokio::runtime::Runtime, adder: &ActorRef<Calc>) -> crate::Result<Counts> {
    Ok(rt.block_on(adder.ask(Calc::AskReport, Duration::from_secs(60)))?)
}

/// A latency histogram in nanoseconds (1 ns .. 60 s, 3 digits).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// The frame volley writes for one RemotePingPong ping (`Ping { n, reply_to
/// }`: the reply ref is a 4-byte ref id on the wire), encoded with volley's
/// own encoder and serializer.
pub fn ping_frame() -> Vec<u8> {
    use volley_remote::serialization::BincodeSerializer;
    use volley_remote::wire::{Encoder, Lane, RefId};
    let mut buf = bytes::BytesMut::new();
    Encoder::for_lane(Lane::Ordinary)
        .user_message(
            &mut buf,
            RefId::new(7).expect("non-zero"),
            None,
            PING_ID,
            &BincodeSerializer,
            &(12_345u32, 9u32),
        )
        .expect("a small frame encodes");
    buf.to_vec()
}

/// The machine's load average as `1m 5m 15m`.
pub fn load() -> String {
    crate::report::load_average().unwrap_or_else(|| "?".into())
}

/// The "best rate vs target" note shared by remote-tell and remote-ask.
pub fn best_rate_note(
    rates: impl IntoIterator<Item = f64>,
    what: &str,
    target: f64,
    seed: &str,
) -> String {
    let best = rates.into_iter().fold(0.0, f64::max);
    format!(
        "best volley {what}: {:.2} M/s — target ≥ {} M: {} ({seed})",
        best / 1e6,
        target / 1e6,
        crate::report::verdict(best >= target)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ping_frame_has_a_header_and_a_small_body() {
        let f = ping_frame();
        assert!((20..=40).contains(&f.len()), "{}", f.len());
        let len = u32::from_le_bytes([f[0], f[1], f[2], f[3]]) as usize;
        assert_eq!(len + 4, f.len());
    }

    #[test]
    fn registry_builds() {
        let _ = registry();
        assert_eq!(Layout::DEFAULT.describe(), "2d+1io");
        let setup = Layout::DEFAULT.setup(true);
        assert_eq!((setup.processes, setup.threads.as_str()), (2, "2d+1io"));
    }

    #[test]
    fn the_best_rate_is_judged_against_the_target() {
        assert_eq!(
            best_rate_note([1e6, 3e6, 2e6], "remote tell", 2e6, "seed: 1 M"),
            "best volley remote tell: 3.00 M/s — target ≥ 2 M: met (seed: 1 M)"
        );
        assert!(best_rate_note([], "x", 1e6, "s").contains("0.00 M/s — target ≥ 1 M: MISSED"));
    }
}
