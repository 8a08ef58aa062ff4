//! A cluster of node processes on loopback, each reachable only through
//! its relay (`volley_testkit::relay`), and the waits the tests are
//! written in: "node X sees member Y Up", with a deadline and every
//! node's output in the failure message.

use std::sync::Arc;
use std::time::Duration;

use volley_testkit::dilated;
use volley_testkit::relay::Relays;

use super::config::NodeConfig;
use super::process::NodeProcess;
use super::singleton::now_us;
use super::transcript::{Line, Transcript};

/// The longest any one step may take, on a loaded machine.
pub fn step() -> Duration {
    dilated(Duration::from_secs(20))
}

/// The nodes' `suspect_to_down_after`: Akka's `acceptable-heartbeat-pause`
/// (3 s), the silence Akka's failure detector forgives a member before it
/// is unreachable. With 2 s, a member that had just joined a loaded
/// machine's cluster was declared unreachable while alive: its peers'
/// connections to it took up to 2.8 s to shake hands (seen in the
/// ten-restart soak's transcripts at a load average of 24), so neither
/// their probes nor its refutation could pass in time. Akka forgives a
/// new member more still: its first heartbeat is awaited
/// `expected-response-after` (1 s) before the pause counts.
pub const SUSPECT_TO_DOWN_AFTER: Duration = Duration::from_secs(3);

/// How long a node has to exit when told to.
const EXIT_LIMIT: Duration = Duration::from_secs(10);

pub struct ProcessCluster {
    pub relays: Relays,
    configs: Vec<NodeConfig>,
    /// Each node's current process; `None` once killed or exited.
    nodes: Vec<Option<NodeProcess>>,
    /// Each node's current incarnation, `host:port#uid`.
    members: Vec<String>,
    transcript: Arc<Transcript>,
    /// The runs killed (kill -9), each with the wall clock (µs) once it
    /// was dead.
    killed: Vec<(usize, u128)>,
}

impl ProcessCluster {
    /// `n` nodes, each behind its relay, joining through the first three
    /// (the first forms the cluster); returns once each printed its
    /// identity, not once they are Up (see [`Self::await_all_up`]).
    pub fn start(n: usize) -> ProcessCluster {
        Self::start_with(n, |_, _| {})
    }

    /// As [`Self::start`], with each node's configuration changed by
    /// `tweak(index, config)` first.
    pub fn start_with(n: usize, tweak: impl Fn(usize, &mut NodeConfig)) -> ProcessCluster {
        let binds: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let relays = Relays::start(&binds).expect("the relays start");
        let seeds: Vec<u16> = relays.ports().iter().take(3).copied().collect();
        let configs: Vec<NodeConfig> = (0..n)
            .map(|i| {
                let mut config = NodeConfig {
                    bind: binds[i],
                    port: relays.ports()[i],
                    seeds: seeds.clone(),
                    cluster: "test".to_owned(),
                    secret: None,
                    suspect_ms: SUSPECT_TO_DOWN_AFTER.as_millis() as u64,
                    strategy: "keep-majority".to_owned(),
                    singleton: None,
                    sharding: None,
                    seed_node_timeout: None,
                };
                tweak(i, &mut config);
                config
            })
            .collect();
        let mut cluster = ProcessCluster {
            relays,
            configs,
            nodes: (0..n).map(|_| None).collect(),
            members: vec![String::new(); n],
            transcript: Arc::new(Transcript::default()),
            killed: Vec::new(),
        };
        for i in 0..n {
            cluster.launch(i, format!("node {i}"));
        }
        for i in 0..n {
            cluster.members[i] = cluster.await_self(i);
        }
        cluster
    }

    /// Starts node `i`'s process; its pid goes to the relays before it
    /// can dial anyone.
    fn launch(&mut self, i: usize, name: String) {
        let process = NodeProcess::start(&self.configs[i], name, &self.transcript);
        self.relays.set_pid(i, process.pid());
        self.nodes[i] = Some(process);
    }

    fn await_self(&self, i: usize) -> String {
        let run = self.run(i);
        let mut found = None;
        self.transcript
            .await_that(step(), &format!("node {i} to start"), |lines| {
                found = lines
                    .iter()
                    .filter(|l| l.run == run && !l.log)
                    .find_map(|l| l.text.strip_prefix("SELF ").map(str::to_owned));
                found.is_some()
            });
        found.expect("found")
    }

    fn run(&self, i: usize) -> usize {
        self.nodes[i]
            .as_ref()
            .unwrap_or_else(|| panic!("node {i} is not running"))
            .run
    }

    fn live(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].is_some())
            .collect()
    }

    /// Node `i`'s current incarnation, `host:port#uid`.
    pub fn member(&self, i: usize) -> &str {
        &self.members[i]
    }

    /// `uid` of node `i`'s current incarnation.
    pub fn uid(&self, i: usize) -> u64 {
        let (_, uid) = self.members[i].rsplit_once('#').expect("host:port#uid");
        uid.parse().expect("a uid")
    }

    /// The advertised port of node `i`.
    pub fn port(&self, i: usize) -> u16 {
        self.configs[i].port
    }

    /// Waits until each of `observers` has reported `EVENT <kind> <member>`.
    pub fn await_seen(&self, observers: &[usize], kind: &str, member: &str) {
        let runs: Vec<usize> = observers.iter().map(|&i| self.run(i)).collect();
        let event = format!("EVENT {kind} {member}");
        self.transcript.await_that(
            step(),
            &format!("nodes {observers:?} to see {kind} {member}"),
            |lines| runs.iter().all(|&run| reported(lines, run, &event)),
        );
    }

    /// Waits until `done` holds of every line so far, for at most
    /// `limit`; whether it did.
    pub fn wait_for_lines(&self, limit: Duration, done: impl FnMut(&[Line]) -> bool) -> bool {
        self.transcript.wait_for(limit, done)
    }

    /// The transcript's run of node `i`'s current process.
    pub fn run_of(&self, i: usize) -> usize {
        self.run(i)
    }

    /// Waits until node `i` has reported a line that starts with `prefix`.
    pub fn await_report(&self, i: usize, prefix: &str) {
        let run = self.run(i);
        self.transcript
            .await_that(step(), &format!("node {i} to report {prefix}"), |lines| {
                lines
                    .iter()
                    .any(|l| l.run == run && !l.log && l.text.starts_with(prefix))
            });
    }

    /// Waits until the processes together (restarted and killed ones
    /// too) have reported `count` lines that start with `prefix`.
    pub fn await_all_reports(&self, prefix: &str, count: usize, limit: Duration) {
        self.transcript.await_that(
            limit,
            &format!("{count} reports {prefix:?} in all"),
            |lines| {
                let reported = lines
                    .iter()
                    .filter(|l| !l.log && l.text.starts_with(prefix));
                reported.count() >= count
            },
        );
    }

    /// Waits until every live node has seen every live node Up.
    pub fn await_all_up(&self) {
        for i in self.live() {
            let member = self.members[i].clone();
            self.await_seen(&self.live(), "Up", &member);
        }
    }

    /// Node `i`'s reports so far that start with `prefix`.
    pub fn reports(&self, i: usize, prefix: &str) -> Vec<String> {
        let run = self.run(i);
        self.transcript
            .reports(run)
            .into_iter()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }

    /// The reports of every process so far (restarted and killed ones
    /// too) that start with `prefix`.
    pub fn all_reports(&self, prefix: &str) -> Vec<String> {
        self.transcript
            .all_reports()
            .into_iter()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }

    /// Sends `line` to node `i` and waits for its `OK`; panics at an `ERR`.
    pub fn command(&mut self, i: usize, line: &str) {
        let run = self.run(i);
        let answers = |lines: Vec<String>| -> Vec<String> {
            let answer = |l: &String| l.starts_with("OK ") || l.starts_with("ERR ");
            lines.into_iter().filter(answer).collect()
        };
        let before = answers(self.transcript.reports(run)).len();
        self.nodes[i]
            .as_mut()
            .unwrap_or_else(|| panic!("node {i} is not running"))
            .command(line);
        self.transcript
            .await_that(step(), &format!("node {i} to obey {line:?}"), |lines| {
                let own = lines.iter().filter(|l| l.run == run && !l.log);
                own.filter(|l| l.text.starts_with("OK ") || l.text.starts_with("ERR "))
                    .count()
                    > before
            });
        let answer = answers(self.transcript.reports(run)).swap_remove(before);
        if answer.starts_with("ERR ") {
            panic!("node {i} refused {line:?}: {answer}\n{}", self.tail());
        }
    }

    /// Sends `line` to node `i` until its last report starting with
    /// `prefix` reads `expected`.
    pub fn await_answer(&mut self, i: usize, line: &str, prefix: &str, expected: &str) {
        let deadline = std::time::Instant::now() + step();
        loop {
            self.command(i, line);
            let last = self.reports(i, prefix).pop();
            if last.as_deref().and_then(|l| l.strip_prefix(prefix)) == Some(expected) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "node {i} answered {last:?} to {line:?}, expected {prefix}{expected}\n{}",
                self.transcript.tail()
            );
        }
    }

    /// The numbers node `i`'s sink has received.
    pub fn count(&mut self, i: usize) -> u64 {
        self.command(i, "count");
        let last = self.reports(i, "COUNT ").pop().expect("answered");
        last["COUNT ".len()..].parse().expect("a count")
    }

    /// Waits until node `i`'s sink has received `expected` numbers; panics
    /// with what it has if it does not.
    pub fn await_count(&mut self, i: usize, expected: u64) {
        let deadline = std::time::Instant::now() + step();
        loop {
            let got = self.count(i);
            if got == expected {
                return;
            }
            assert!(
                got < expected && std::time::Instant::now() < deadline,
                "node {i} received {got} numbers, expected {expected} (every line: {})\n{}",
                self.transcript.save().display(),
                self.transcript.tail()
            );
        }
    }

    /// Node `i`'s resident memory, KiB (`VmRSS`).
    pub fn resident_kib(&self, i: usize) -> u64 {
        let pid = self.nodes[i]
            .as_ref()
            .unwrap_or_else(|| panic!("node {i} is not running"))
            .pid();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("linux");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/<pid>/status")
    }

    /// Node `i`'s last answer that starts with `prefix`, as numbers.
    pub fn numbers(&self, i: usize, prefix: &str) -> Vec<u64> {
        let last = self.reports(i, prefix).pop().unwrap_or_default();
        last.split_whitespace()
            .skip(1)
            .filter_map(|n| n.parse().ok())
            .collect()
    }

    /// kill -9 of node `i`.
    pub fn kill(&mut self, i: usize) {
        let mut node = self.nodes[i]
            .take()
            .unwrap_or_else(|| panic!("node {i} is not running"));
        node.kill();
        self.killed.push((node.run, now_us()));
    }

    /// The runs killed so far (kill -9, also by [`Self::restart`]), each
    /// with the wall clock in µs once it was dead.
    pub fn killed(&self) -> &[(usize, u128)] {
        &self.killed
    }

    /// The reports of every process so far, each with its run.
    pub fn all_reports_by_run(&self) -> Vec<(usize, String)> {
        self.transcript.all_reports_by_run()
    }

    /// Sends a signal (`STOP`, `CONT`) to node `i`.
    pub fn signal(&self, i: usize, signal: &str) {
        self.nodes[i]
            .as_ref()
            .unwrap_or_else(|| panic!("node {i} is not running"))
            .signal(signal);
    }

    /// Starts node `i` again on the same ports (a new incarnation);
    /// returns once it printed its identity.
    pub fn restart(&mut self, i: usize) {
        if self.nodes[i].is_some() {
            self.kill(i);
        }
        self.launch(i, format!("node {i} (restarted)"));
        self.members[i] = self.await_self(i);
    }

    /// Tells node `i` to exit; panics if it does not in time.
    pub fn exit(&mut self, i: usize) {
        let mut node = self.nodes[i]
            .take()
            .unwrap_or_else(|| panic!("node {i} is not running"));
        let exited = node.exit(dilated(EXIT_LIMIT));
        assert!(exited, "node {i} did not exit\n{}", self.transcript.tail());
    }

    /// Panics if any live node has seen a member Downed.
    pub fn assert_nobody_downed(&self) {
        for i in self.live() {
            let downed = self.reports(i, "EVENT Downed");
            assert!(downed.is_empty(), "node {i}: {downed:?}\n{}", self.tail());
        }
    }

    /// Every node's last lines, for a failure message.
    pub fn tail(&self) -> String {
        self.transcript.tail()
    }

    /// Every node's last lines, and where every line of the run is kept,
    /// for a failure message.
    pub fn tail_and_save(&self) -> String {
        let path = self.transcript.save();
        format!("{}every line: {}", self.transcript.tail(), path.display())
    }
}

/// With `VOLLEY_KEEP_TRANSCRIPTS` set, a run that passed keeps its
/// transcript too (its path on stderr), to compare passing runs' timings.
impl Drop for ProcessCluster {
    fn drop(&mut self) {
        if std::env::var_os(KEEP_TRANSCRIPTS).is_some() && !std::thread::panicking() {
            eprintln!("every line: {}", self.transcript.save().display());
        }
    }
}

/// The variable that keeps every run's transcript.
const KEEP_TRANSCRIPTS: &str = "VOLLEY_KEEP_TRANSCRIPTS";

fn reported(lines: &[Line], run: usize, text: &str) -> bool {
    lines
        .iter()
        .any(|l| l.run == run && !l.log && l.text == text)
}

/// A port nobody listens on now, outside the kernel's ephemeral range, so
/// that a node restarted on it does not find it taken by a connection.
fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new();
    (0u64..)
        .map(|attempt| 20_000 + (random.hash_one(attempt) % 10_000) as u16)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("an unbounded search")
}
