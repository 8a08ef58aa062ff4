//! ractor_cluster: `remote-pingpong`, after Akka.NET's RemotePingPong, in the
//! `cluster` build only (see Cargo.toml for why it is a separate build).
//!
//! Two ractor_cluster nodes in one process, each a `NodeServer` on its own
//! loopback port and its own 2-worker tokio runtime (A and B, like the two
//! ActorSystems of the Pekko harness); A connects to B with
//! `ractor_cluster::client_connect`. For each client count C:
//!
//! - C echo actors are spawned on B's runtime and join a process group
//!   (`ractor::pg`), which ractor_cluster syncs to the peer node. ractor_cluster
//!   has no remote spawn.
//! - ractor_cluster represents a remote actor by a `RemoteActor` stand-in that
//!   the local `NodeSession` spawns as its child. ractor's registries are
//!   process-global, so in one process both sessions announce every actor and
//!   each node gets a stand-in for it; A's clients use the stand-ins under A's
//!   session (found among its children once the group has synced), so a ping
//!   goes client → A's session → TCP → B's session → echo.
//! - C clients on A each do R round trips with `inflight` in flight: primed
//!   with `inflight` pings, every reply sends the next until R were sent.
//! - ractor_cluster messages carry no sender, so a ping is
//!   `Ping { n: u32, reply_to: u64 }` (the client's pid), 12 bytes through
//!   ractor's own `BytesConvertable`; the echo replies `n` (a `u32`) to the
//!   stand-in of that pid under B's session, resolved once per client.
//!
//! Total = C × R × 2; the clients' and the echoes' counts are verified.

use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, BytesConvertable};
use ractor_cluster::{NodeServer, NodeServerMessage, NodeSessionMessage};
use tokio::runtime::Runtime;

use super::multi_thread_runtime;

/// How long one measured (or warm-up) round may take before the harness
/// gives up with an error instead of hanging.
pub const ROUND_TIMEOUT: Duration = Duration::from_secs(120);
/// How long connecting the nodes or syncing the actors may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The local message that primes a client; never a real counter (those are
/// below `repeat`, taken modulo `START`).
const START: u32 = u32::MAX;

/// The ping, as it crosses the wire.
#[derive(Debug)]
struct Ping {
    n: u32,
    /// The client's pid (`ActorId::pid`), for the reply.
    reply_to: u64,
}

impl BytesConvertable for Ping {
    fn into_bytes(self) -> Vec<u8> {
        let mut b = Vec::with_capacity(12);
        b.extend_from_slice(&self.n.to_be_bytes());
        b.extend_from_slice(&self.reply_to.to_be_bytes());
        b
    }

    /// Panics on a short payload, as the trait allows (ractor then drops the
    /// message, and the harness reports a count mismatch).
    fn from_bytes(b: Vec<u8>) -> Self {
        Ping {
            n: u32::from_be_bytes(b[0..4].try_into().expect("4 bytes")),
            reply_to: u64::from_be_bytes(b[4..12].try_into().expect("8 bytes")),
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The `RemoteActor` child of `session` that stands for pid `pid` of the
/// peer node, if it exists yet.
fn stand_in(session: &ActorCell, pid: u64) -> Option<ActorCell> {
    session
        .get_children()
        .into_iter()
        .find(|c| !c.get_id().is_local() && c.get_id().pid() == pid)
}

// ---- echo (node B) ----

struct Echo;

struct EchoState {
    /// B's `NodeSession`, whose children are B's stand-ins for A's actors.
    session: ActorCell,
    replies: HashMap<u64, ActorRef<u32>>,
    count: u64,
    counted: Sender<u64>,
}

impl Actor for Echo {
    type Msg = Ping;
    type State = EchoState;
    type Arguments = (ActorCell, Sender<u64>);

    async fn pre_start(
        &self,
        _myself: ActorRef<Ping>,
        (session, counted): Self::Arguments,
    ) -> Result<EchoState, ActorProcessingErr> {
        Ok(EchoState {
            session,
            replies: HashMap::new(),
            count: 0,
            counted,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Ping>,
        Ping { n, reply_to }: Ping,
        st: &mut EchoState,
    ) -> Result<(), ActorProcessingErr> {
        st.count += 1;
        let to = match st.replies.get(&reply_to) {
            Some(to) => to,
            None => {
                let cell = stand_in(&st.session, reply_to).ok_or_else(|| {
                    format!("node B has no RemoteActor for client pid {reply_to}")
                })?;
                st.replies.entry(reply_to).or_insert(cell.into())
            }
        };
        to.cast(n)?;
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Ping>,
        st: &mut EchoState,
    ) -> Result<(), ActorProcessingErr> {
        let _ = st.counted.send(st.count);
        Ok(())
    }
}

// ---- client (node A) ----

struct Client;

struct ClientState {
    echo: ActorRef<Ping>,
    me: u64,
    repeat: u64,
    inflight: u64,
    sent: u64,
    received: u64,
    done: Sender<u64>,
}

impl ClientState {
    fn ping(&mut self) -> Result<(), ActorProcessingErr> {
        let n = (self.sent % START as u64) as u32;
        self.echo.cast(Ping {
            n,
            reply_to: self.me,
        })?;
        self.sent += 1;
        Ok(())
    }
}

impl Actor for Client {
    type Msg = u32;
    type State = ClientState;
    /// (A's stand-in for the echo, repeat, inflight, done)
    type Arguments = (ActorRef<Ping>, u64, u64, Sender<u64>);

    async fn pre_start(
        &self,
        myself: ActorRef<u32>,
        (echo, repeat, inflight, done): Self::Arguments,
    ) -> Result<ClientState, ActorProcessingErr> {
        Ok(ClientState {
            echo,
            me: myself.get_id().pid(),
            repeat,
            inflight,
            sent: 0,
            received: 0,
            done,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<u32>,
        n: u32,
        st: &mut ClientState,
    ) -> Result<(), ActorProcessingErr> {
        if n == START {
            for _ in 0..st.inflight.min(st.repeat) {
                st.ping()?;
            }
            return Ok(());
        }
        st.received += 1;
        if st.sent < st.repeat {
            st.ping()?;
        } else if st.received == st.repeat {
            let _ = st.done.send(st.received);
        }
        Ok(())
    }
}

// ---- the two nodes ----

struct NodeHandle {
    rt: Runtime,
    server: ActorRef<NodeServerMessage>,
    port: u16,
    /// This node's `NodeSession` with the other node, once connected.
    session: Option<ActorCell>,
}

/// A free loopback port (bound, read and released; the NodeServer binds it
/// right after).
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(err)?;
    Ok(l.local_addr().map_err(err)?.port())
}

impl NodeHandle {
    fn start(name: &str) -> Result<Self, String> {
        let rt = multi_thread_runtime();
        let port = free_port()?;
        // Raw TCP (no TLS), isolated connection mode (the defaults).
        let server = NodeServer::new(
            port,
            "volley-bench".to_string(),
            name.to_string(),
            "127.0.0.1".to_string(),
            None,
            None,
        )
        .with_listen_addr(std::net::Ipv4Addr::LOCALHOST.into());
        let (server, _) = rt
            .block_on(Actor::spawn(None, server, ()))
            .map_err(|e| format!("{name}: NodeServer failed to start: {e}"))?;
        Ok(NodeHandle {
            rt,
            server,
            port,
            session: None,
        })
    }

    /// This node's only `NodeSession` (a child of its `NodeServer`).
    fn find_session(&self) -> Option<ActorCell> {
        self.server
            .get_cell()
            .get_children()
            .into_iter()
            .find(|c| c.is_message_type_of::<NodeSessionMessage>() == Some(true))
    }

    fn session(&self) -> &ActorCell {
        self.session.as_ref().expect("connected")
    }

    fn stop(self) {
        self.server.stop(None);
        self.rt.shutdown_timeout(Duration::from_secs(2));
    }
}

/// Polls `f` every 5 ms until it returns `Some`, or fails with `what` after
/// [`SETUP_TIMEOUT`].
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> Result<T, String> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "timed out after {} s waiting for {what}",
                SETUP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Authenticated and done with the initial state exchange (PIDs, groups).
fn ready(node: &NodeHandle, session: &ActorCell) -> bool {
    let session: ActorRef<NodeSessionMessage> = session.clone().into();
    node.rt
        .block_on(async { ractor::call_t!(session, NodeSessionMessage::GetReadyState, 1000) })
        .unwrap_or(false)
}

struct Nodes {
    a: NodeHandle,
    b: NodeHandle,
}

impl Nodes {
    fn start() -> Result<Self, String> {
        let mut a = NodeHandle::start("pingpong-a")?;
        let mut b = NodeHandle::start("pingpong-b")?;
        eprintln!(
            "ractor: node A on 127.0.0.1:{}, node B on 127.0.0.1:{}",
            a.port, b.port
        );
        let addr_b = format!("127.0.0.1:{}", b.port);
        a.rt.block_on(ractor_cluster::client_connect(&a.server, addr_b.as_str()))
            .map_err(|e| format!("connecting node A to node B: {e:?}"))?;
        let sa = wait_for("node A's session", || a.find_session())?;
        let sb = wait_for("node B's session", || b.find_session())?;
        wait_for("the nodes to authenticate and sync", || {
            (ready(&a, &sa) && ready(&b, &sb)).then_some(())
        })?;
        a.session = Some(sa);
        b.session = Some(sb);
        Ok(Nodes { a, b })
    }

    fn stop(self) {
        self.a.stop();
        self.b.stop();
    }
}

/// One round with fresh actors: C echoes on B, C clients on A, R round trips
/// each. Returns (Total = C × R × 2, elapsed from priming to the last reply).
fn round(
    nodes: &Nodes,
    tag: &str,
    clients: u64,
    repeat: u64,
    inflight: u64,
) -> Result<(u64, Duration), String> {
    let (counted_tx, counted_rx) = channel();
    let group = format!("remote-pingpong-{tag}");
    let session_b = nodes.b.session().clone();
    let echoes: Vec<ActorRef<Ping>> = nodes.b.rt.block_on(async {
        let mut echoes = Vec::new();
        for _ in 0..clients {
            let (echo, _) = Actor::spawn(None, Echo, (session_b.clone(), counted_tx.clone()))
                .await
                .map_err(err)?;
            echoes.push(echo);
        }
        ractor::pg::join(group.clone(), echoes.iter().map(|e| e.get_cell()).collect());
        Ok::<_, String>(echoes)
    })?;
    drop(counted_tx);

    // Discovery on A: wait until the group shows every echo as a remote
    // member, then take A's own stand-ins.
    let pids: Vec<u64> = echoes.iter().map(|e| e.get_id().pid()).collect();
    wait_for("the echoes' process group to sync to node A", || {
        let members = ractor::pg::get_members(&group);
        pids.iter()
            .all(|p| {
                members
                    .iter()
                    .any(|m| !m.get_id().is_local() && m.get_id().pid() == *p)
            })
            .then_some(())
    })?;
    let session_a = nodes.a.session();
    let remote_echoes = pids
        .iter()
        .map(|&p| {
            wait_for("node A's RemoteActor for an echo", || {
                stand_in(session_a, p)
            })
            .map(ActorRef::<Ping>::from)
        })
        .collect::<Result<Vec<_>, String>>()?;

    let (done_tx, done_rx) = channel();
    let client_refs: Vec<ActorRef<u32>> = nodes.a.rt.block_on(async {
        let mut refs = Vec::new();
        for echo in &remote_echoes {
            let (c, _) = Actor::spawn(
                None,
                Client,
                (echo.clone(), repeat, inflight, done_tx.clone()),
            )
            .await
            .map_err(err)?;
            refs.push(c);
        }
        Ok::<_, String>(refs)
    })?;
    drop(done_tx);
    // The echoes reply through B's stand-ins for the clients: make sure
    // ractor_cluster has announced every client to B before the clock starts.
    let session_b = nodes.b.session();
    for c in &client_refs {
        wait_for("node B's RemoteActor for a client", || {
            stand_in(session_b, c.get_id().pid())
        })?;
    }

    let start = Instant::now();
    for c in &client_refs {
        c.cast(START).map_err(err)?;
    }
    let outcome = await_clients(&done_rx, clients, start);
    let elapsed = start.elapsed();

    for c in &client_refs {
        c.stop(None);
    }
    for e in &echoes {
        e.stop(None);
    }
    let echo_count = collect_counts(&counted_rx, clients);
    ractor::pg::leave(group, echoes.iter().map(|e| e.get_cell()).collect());

    let client_count = match outcome {
        Ok(n) => n,
        Err(done) => {
            let secs = elapsed.as_secs_f64();
            return Err(format!(
                "{tag}: timed out after {} s: {done} of {clients} clients finished; the echoes \
                 had received {echo_count} of {} pings (≈ {:.0} round trips/s)",
                ROUND_TIMEOUT.as_secs(),
                clients * repeat,
                echo_count as f64 / secs,
            ));
        }
    };
    let expected = 2 * clients * repeat;
    if client_count + echo_count != expected {
        return Err(format!(
            "{tag}: actors counted {} received messages (clients {client_count}, echoes \
             {echo_count}), expected {expected}",
            client_count + echo_count
        ));
    }
    Ok((expected, elapsed.max(Duration::from_nanos(1))))
}

/// Sums the clients' reply counts, or returns how many clients finished when
/// [`ROUND_TIMEOUT`] ran out.
fn await_clients(done: &Receiver<u64>, clients: u64, start: Instant) -> Result<u64, u64> {
    let deadline = start + ROUND_TIMEOUT;
    let mut sum = 0;
    for finished in 0..clients {
        match done.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(n) => sum += n,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                return Err(finished)
            }
        }
    }
    Ok(sum)
}

/// Sums the echoes' counts, which they report when stopped.
fn collect_counts(counted: &Receiver<u64>, echoes: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut sum = 0;
    for _ in 0..echoes {
        match counted.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(n) => sum += n,
            Err(_) => break,
        }
    }
    sum
}

/// Runs the scenario: a warm-up round (min(10, max C) clients, R/10 round
/// trips each, at least 1000 and at most R), then one round per client count,
/// calling `emit(clients, total, elapsed)` after each.
pub fn remote_pingpong(
    clients: &[u64],
    repeat: u64,
    inflight: u64,
    mut emit: impl FnMut(u64, u64, Duration),
) -> Result<(), String> {
    let nodes = Nodes::start()?;
    let result = (|| {
        let warm_clients = clients.iter().copied().max().unwrap_or(1).min(10);
        let warm_repeat = (repeat / 10).max(1000).min(repeat);
        eprintln!("ractor: warmup clients={warm_clients} repeat={warm_repeat}");
        round(&nodes, "warmup", warm_clients, warm_repeat, inflight)?;
        for &c in clients {
            eprintln!("ractor: measuring clients={c} repeat={repeat}");
            let (total, elapsed) = round(&nodes, &format!("c{c}"), c, repeat, inflight)?;
            emit(c, total, elapsed);
        }
        Ok(())
    })();
    nodes.stop();
    result
}
