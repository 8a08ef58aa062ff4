//! The peer itself: its configuration, the code it runs in the second
//! process (`run_peer`), and the test's handle on it (`Peer`), which kills
//! it when dropped.

use super::*;

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
    /// `reconnect_backoff` and `reconnect_backoff_max`.
    pub backoff_ms: (u64, u64),
}

impl PeerConfig {
    pub fn new(interval_ms: u64, pause_ms: u64) -> Self {
        PeerConfig {
            port: 0,
            interval_ms,
            pause_ms,
            parent: None,
            extra_sinks: Vec::new(),
            backoff_ms: (BACKOFF_MS, BACKOFF_MAX_MS),
        }
    }

    fn encode(&self) -> String {
        let mut s = format!(
            "port={};interval={};pause={};sinks={};backoff={},{}",
            self.port,
            self.interval_ms,
            self.pause_ms,
            self.extra_sinks.join(","),
            self.backoff_ms.0,
            self.backoff_ms.1
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
            backoff_ms: kv["backoff"]
                .split_once(',')
                .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
                .unwrap(),
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
    let settings = RemoteSettings {
        reconnect_backoff: Duration::from_millis(config.backoff_ms.0),
        reconnect_backoff_max: Duration::from_millis(config.backoff_ms.1),
        ..remote_settings(config.port, &fd)
    };
    let node = local_node("peer", settings, &sinks).await;
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
            // A message to the test's `/user/hello`: this side talks first.
            "greet" => {
                let parent = config.parent.as_ref().expect("greet needs the parent");
                let hello = node
                    .remoting
                    .resolve::<Load>(&format!("{parent}/user/hello"))
                    .unwrap();
                hello.tell(Load::Small { n: 0 });
                say("GREETED");
            }
            // The round trip of this node's heartbeats to the parent: known
            // once the parent's own control lane reaches this node.
            "rtt" => {
                let parent = config.parent.as_ref().expect("rtt needs the parent");
                match node.remoting.heartbeat_rtt(parent) {
                    Some(rtt) => say(&format!("RTT {}", rtt.as_micros())),
                    None => say("RTT none"),
                }
            }
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
            tick if tick.starts_with("tick ") => {
                // A tell a millisecond to the `Load` actor at that path.
                let to = node.remoting.resolve::<Load>(&tick[5..]).unwrap();
                tokio::spawn(async move {
                    for n in 0.. {
                        to.tell(Load::Small { n });
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                });
                say("TICKING");
            }
            other if other.starts_with("hello ") => {
                // Dials the test's node: one that saw this node's last
                // incarnation leave talks to it again once it dials in.
                let to = node.remoting.resolve::<i64>(&other["hello ".len()..]);
                to.unwrap().tell(-1);
                say("HELLO");
            }
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
            .envs([crate::common::dispatcher_env()])
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
