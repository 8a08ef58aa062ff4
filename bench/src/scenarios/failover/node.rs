//! The watched node of `failover`: its protocol, the node itself (this
//! binary re-run as the hidden `failover-node` subcommand) and the handle
//! the watcher keeps on that child process (SIGKILL, SIGSTOP, SIGCONT).

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use volley::{Actor, ActorRef, ActorSystem, Context, DispatcherSettings, HandleResult, Props};
use volley_remote::transport::FailureDetectorSettings;
use volley_remote::wire::Address;
use volley_remote::{Registry, RemoteSettings, Remoting};

use super::Params;

/// The hidden subcommand that runs the watched node.
pub const NODE_COMMAND: &str = "failover-node";

/// The watched node's actor system name.
pub const NODE_SYSTEM: &str = "failover-b";

/// What the targets on the watched node accept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TargetMsg {
    /// The small-message stream: counted.
    Work(u64),
    /// Answered with the node's process id.
    Pid(ActorRef<u64>),
}

/// Bytes that serde writes as one byte string (`serialize_bytes`), not as a
/// sequence of `u8`s, so a 10 MB blob is copied, not encoded byte by byte
/// (Pekko's `ByteArraySerializer` copies too).
#[derive(Debug, Clone)]
pub struct Payload(pub Vec<u8>);

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl<'de> serde::de::Visitor<'de> for Bytes {
            type Value = Payload;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Payload, E> {
                Ok(Payload(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Payload, E> {
                Ok(Payload(v))
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

/// One message of the large-messages case, acknowledged with its length.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Blob {
    pub data: Payload,
    pub ack: ActorRef<u64>,
}

pub const TARGET_ID: u32 = 1101;
pub const U64_ID: u32 = 1102;
pub const BLOB_ID: u32 = 1103;

/// The protocol, the same on both nodes.
pub fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<TargetMsg>(TARGET_ID).expect("fresh id");
    r.register::<u64>(U64_ID).expect("fresh id");
    r.register::<Blob>(BLOB_ID).expect("fresh id");
    r
}

/// Counts the stream; answers `Pid`.
#[derive(Default)]
struct Target {
    received: u64,
}

impl Actor for Target {
    type Msg = TargetMsg;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: TargetMsg) -> HandleResult {
        match msg {
            TargetMsg::Work(_) => self.received += 1,
            TargetMsg::Pid(reply_to) => reply_to.tell(std::process::id() as u64),
        }
        Ok(())
    }
}

/// Acknowledges every blob with its length.
struct Sink;

impl Actor for Sink {
    type Msg = Blob;
    fn handle(&mut self, _ctx: &mut Context<Self>, blob: Blob) -> HandleResult {
        blob.ack.tell(blob.data.0.len() as u64);
        Ok(())
    }
}

/// A node with the failover protocol: the heartbeat and detector settings
/// of `params`, on 127.0.0.1:`port` (0 picks one), 2 dispatcher threads
/// and 1 I/O thread (remote-*'s default layout).
pub fn start_node(
    rt: &tokio::runtime::Runtime,
    name: &str,
    port: u16,
    params: &Params,
) -> crate::Result<(ActorSystem, Remoting)> {
    let settings = volley::Settings {
        io_threads: 1,
        default_dispatcher: DispatcherSettings {
            threads: 2,
            ..Default::default()
        },
        ..volley::Settings::default()
    };
    let system = ActorSystem::with_settings(name, settings)?;
    let remote = RemoteSettings {
        port,
        failure_detector: FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(params.heartbeat_ms),
            acceptable_heartbeat_pause: Duration::from_millis(params.pause_ms),
            threshold: params.threshold,
            ..FailureDetectorSettings::default()
        },
        ..RemoteSettings::default()
    };
    let remoting = rt.block_on(Remoting::start_with(&system, registry(), remote))?;
    Ok((system, remoting))
}

/// `volley-bench failover-node --port P --watched N --heartbeat-ms H
/// --pause-ms A --threshold T`: the watched node. Spawns `target-0..N-1`
/// and `sink` under `/user`, prints `ADDRESS <address> PID <pid>` and runs
/// until its stdin closes (or a signal ends it).
pub fn serve(args: &[String]) -> crate::Result<()> {
    let mut params = Params::default();
    let mut port = 0u16;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--port" => port = value.parse()?,
            "--watched" => params.watched = value.parse()?,
            "--heartbeat-ms" => params.heartbeat_ms = value.parse()?,
            "--pause-ms" => params.pause_ms = value.parse()?,
            "--threshold" => params.threshold = value.parse()?,
            other => return Err(format!("{NODE_COMMAND}: unknown argument {other}").into()),
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (system, remoting) = start_node(&rt, NODE_SYSTEM, port, &params)?;
    for i in 0..params.watched {
        system.spawn(&format!("target-{i}"), Props::new(Target::default))?;
    }
    system.spawn("sink", Props::new(|| Sink))?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "ADDRESS {} PID {}",
            remoting.address(),
            std::process::id()
        )?;
        out.flush()?;
    }
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {
        line.clear();
    }
    remoting.shutdown();
    rt.block_on(system.terminate());
    Ok(())
}

/// The watched node's process, as the watcher sees it.
pub struct NodeProcess {
    child: Child,
    pub address: Address,
    pub pid: u32,
    /// When its address line arrived: the node is up and listening.
    pub up: Instant,
}

impl NodeProcess {
    /// Starts `volley-bench failover-node` on `port` and reads its address.
    pub fn start(params: &Params, port: u16) -> crate::Result<NodeProcess> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(NODE_COMMAND)
            .args(["--port", &port.to_string()])
            .args(["--watched", &params.watched.to_string()])
            .args(["--heartbeat-ms", &params.heartbeat_ms.to_string()])
            .args(["--pause-ms", &params.pause_ms.to_string()])
            .args(["--threshold", &params.threshold.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads the address, then drains the rest so the node never dies
        // of a closed pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("ADDRESS ") {
                    let _ = tx.send(rest.to_string());
                }
            }
        });
        let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the failover node did not print its address".into());
        };
        let up = Instant::now();
        let (address, pid) = line
            .split_once(" PID ")
            .ok_or_else(|| format!("bad address line from the failover node: {line}"))?;
        Ok(NodeProcess {
            address: address.parse()?,
            pid: pid.parse()?,
            up,
            child,
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// Sends `signal` (SIGKILL, SIGSTOP, SIGCONT); returns once it is sent.
    pub fn signal(&self, signal: libc::c_int) -> crate::Result<()> {
        // SAFETY: kill(2) on the pid of our own child, which is not reaped
        // before `close`.
        let rc = unsafe { libc::kill(self.pid as libc::pid_t, signal) };
        if rc != 0 {
            return Err(format!(
                "kill({}, {signal}) failed: {}",
                self.pid,
                std::io::Error::last_os_error()
            )
            .into());
        }
        Ok(())
    }

    /// SIGKILL and reap.
    pub fn close(mut self) {
        let _ = self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }
}
