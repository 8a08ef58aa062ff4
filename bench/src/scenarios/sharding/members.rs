//! The member processes of one system in one run: started, told stdin
//! commands, their event lines awaited. Every member runs `sharding-node`
//! (the Pekko peer's, or this binary's volley member) and prints the lines
//! of bench/peers/README.md, "sharding".

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::Params;
use crate::scenarios::cluster::node::{node_args, Line, NodeProcess, Program};
use crate::scenarios::cluster::round::free_ports;
use crate::scenarios::cluster::view::Event;
use crate::scenarios::grpc::cpu_time;

/// The members that seed the cluster (the first three, as in `cluster`).
const SEEDS: usize = 3;

/// The running members of one system.
pub struct Members {
    program: Program,
    params: Params,
    log_dir: PathBuf,
    prefix: String,
    ports: Vec<u16>,
    procs: Vec<Option<NodeProcess>>,
    events: Sender<Line>,
    lines: Receiver<Line>,
    /// Per member, the members it has seen Up and not yet Removed.
    up: Vec<HashSet<String>>,
    /// Per member, whether it printed `terminated` (it left and exited).
    terminated: Vec<bool>,
    /// The fields of the first `started` line: the settings in force.
    pub settings: Option<Map<String, Value>>,
}

impl Members {
    /// Starts `n` members, seeded by the first three.
    pub fn start(
        program: &Program,
        params: &Params,
        n: usize,
        log_dir: &Path,
        prefix: &str,
    ) -> crate::Result<Members> {
        let (events, lines) = channel();
        let mut members = Members {
            program: program.clone(),
            params: params.clone(),
            log_dir: log_dir.to_path_buf(),
            prefix: prefix.to_string(),
            ports: free_ports(n)?,
            procs: Vec::new(),
            events,
            lines,
            up: Vec::new(),
            terminated: Vec::new(),
            settings: None,
        };
        for i in 0..n {
            members.launch(i)?;
        }
        Ok(members)
    }

    fn launch(&mut self, i: usize) -> crate::Result<()> {
        let seeds = &self.ports[..SEEDS.min(self.ports.len())];
        let mut args = self.params.sharding_args();
        args.extend(node_args(self.ports[i], seeds, &self.params.timings()));
        let log = self.log_dir.join(format!("{}-{i}.log", self.prefix));
        let proc = NodeProcess::start(&self.program, i, &args, &log, self.events.clone())?;
        self.procs.push(Some(proc));
        self.up.push(HashSet::new());
        self.terminated.push(false);
        Ok(())
    }

    /// Starts one more member (it joins through the seeds); its index.
    pub fn add(&mut self) -> crate::Result<usize> {
        let i = self.ports.len();
        self.ports.extend(free_ports(1)?);
        self.launch(i)?;
        Ok(i)
    }

    pub fn len(&self) -> usize {
        self.procs.len()
    }

    /// `127.0.0.1:<port>` of member `i`, as the lines name members.
    pub fn address(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.ports[i])
    }

    pub fn port(&self, i: usize) -> u16 {
        self.ports[i]
    }

    /// Sends a stdin command to member `i`.
    pub fn command(&mut self, i: usize, command: &str) -> crate::Result<()> {
        self.procs[i]
            .as_mut()
            .ok_or_else(|| format!("member {i} is gone"))?
            .command(command)
    }

    /// kill -9 of member `i`.
    pub fn kill(&mut self, i: usize) -> crate::Result<()> {
        if let Some(mut p) = self.procs[i].take() {
            p.kill()?;
        }
        Ok(())
    }

    /// Reads lines until one satisfies `wanted` (member, line), within
    /// `timeout`; keeps the membership views up to date on the way.
    pub fn await_line(
        &mut self,
        timeout: Duration,
        what: &str,
        mut wanted: impl FnMut(usize, &Event) -> bool,
    ) -> crate::Result<(usize, Event)> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (i, line) = match self.lines.recv_timeout(left) {
                Ok(got) => got,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("no {what} within {} s", timeout.as_secs()).into())
                }
                Err(RecvTimeoutError::Disconnected) => return Err("every member is gone".into()),
            };
            let event = match line {
                Ok(event) => event,
                Err(bad) => {
                    eprintln!("sharding: member {i}: {bad}");
                    continue;
                }
            };
            if echo_lines() {
                eprintln!("sharding: member {i}: {} {:?}", event.event, event.fields);
            }
            self.note(i, &event);
            if wanted(i, &event) {
                return Ok((i, event));
            }
        }
    }

    fn note(&mut self, i: usize, event: &Event) {
        let member = event.member.clone().unwrap_or_default();
        match event.event.as_str() {
            "up" => {
                self.up[i].insert(member);
            }
            "removed" => {
                self.up[i].remove(&member);
            }
            "started" if self.settings.is_none() => self.settings = Some(event.fields.clone()),
            "terminated" => self.terminated[i] = true,
            _ => {}
        }
    }

    /// Waits until every member in `nodes` sees every one of them Up.
    pub fn await_all_up(&mut self, nodes: &[usize], timeout: Duration) -> crate::Result<()> {
        let wanted: HashSet<String> = nodes.iter().map(|&i| self.address(i)).collect();
        let converged = |up: &[HashSet<String>]| nodes.iter().all(|&i| wanted.is_subset(&up[i]));
        if converged(&self.up) {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        while !converged(&self.up) {
            let left = deadline.saturating_duration_since(Instant::now());
            self.await_line(left, "member up on every member", |_, e| e.event == "up")?;
        }
        Ok(())
    }

    /// Sends `command` to member `i` and waits for its `answer` line.
    pub fn query(
        &mut self,
        i: usize,
        command: &str,
        answer: &str,
        timeout: Duration,
    ) -> crate::Result<Event> {
        // Its `terminated` line may have come while the driver waited for
        // another member's answer: a query now would wait for nothing.
        if self.terminated[i] {
            return Err(format!("member {i} terminated before {command:?}").into());
        }
        self.command(i, command)?;
        let what = format!("{answer} line from member {i} after {command:?}");
        // A member that leaves may take the command and exit before it
        // answers: its `terminated` line ends the wait, or the query
        // would wait out its whole timeout for an answer that never comes.
        let (_, line) = self.await_line(timeout, &what, |j, e| {
            j == i && (e.event == answer || e.event == "terminated")
        })?;
        if line.event != answer {
            return Err(format!("member {i} terminated before its {answer} line").into());
        }
        Ok(line)
    }

    /// The indices of the members still running (not killed, stopped, or
    /// terminated after a leave).
    pub fn running(&self) -> Vec<usize> {
        (0..self.procs.len())
            .filter(|&i| self.procs[i].is_some() && !self.terminated[i])
            .collect()
    }

    /// Member `i` leaves the cluster and stops (its process exits).
    pub fn forget(&mut self, i: usize) {
        if let Some(p) = self.procs[i].take() {
            p.stop(Duration::from_secs(10));
        }
    }

    /// The CPU time the running members have used so far, user and
    /// system, all threads (from `/proc`).
    pub fn cpu_time(&self) -> crate::Result<Duration> {
        let running = self.running();
        let procs = running.iter().filter_map(|&i| self.procs[i].as_ref());
        procs.map(|p| cpu_time(p.pid())).sum()
    }

    /// Closes every member's stdin and waits for them to exit.
    pub fn stop_all(&mut self) {
        for i in self.running() {
            self.forget(i);
        }
    }
}

/// A number field of a line (0 when missing).
pub fn num(event: &Event, key: &str) -> u64 {
    event.fields.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A list-of-strings field of a line.
pub fn strings(event: &Event, key: &str) -> Vec<String> {
    event
        .fields
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Ids listed by more than one member's `check ... ids` line.
pub fn duplicate_ids(per_member: &[Vec<String>]) -> u64 {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for ids in per_member {
        for id in ids {
            *seen.entry(id.as_str()).or_default() += 1;
        }
    }
    seen.values().filter(|&&n| n > 1).count() as u64
}

/// `VOLLEY_BENCH_ECHO_LINES` set: every member line the driver reads is
/// echoed to stderr, to see what a row waited for.
fn echo_lines() -> bool {
    static ECHO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ECHO.get_or_init(|| std::env::var_os("VOLLEY_BENCH_ECHO_LINES").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_on_two_members_is_one_duplicate() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(duplicate_ids(&[ids(&["1", "2"]), ids(&["3"])]), 0);
        assert_eq!(
            duplicate_ids(&[ids(&["1", "2"]), ids(&["2", "3"]), ids(&["2"])]),
            1
        );
    }
}
