//! Every line the node processes printed, in arrival order, each tagged
//! with the process that printed it: what the tests wait on, and what a
//! failure message shows.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One line of one process (`run` counts the processes started, so a
/// restarted node's lines are told apart from its old incarnation's).
#[derive(Debug, Clone)]
pub struct Line {
    pub run: usize,
    /// A log line (stderr) rather than the node's report (stdout).
    pub log: bool,
    pub text: String,
    /// When the test read it (wall clock, µs), for the saved transcript.
    pub at_us: u128,
}

#[derive(Default)]
pub struct Transcript {
    lines: Mutex<Vec<Line>>,
    grew: Condvar,
    /// Names of the runs, by run: `node 2` or `node 2 (restarted)`.
    names: Mutex<Vec<String>>,
}

/// How many of each process's last lines a failure shows.
const SHOWN: usize = 40;

impl Transcript {
    pub fn new_run(&self, name: String) -> usize {
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        names.push(name);
        names.len() - 1
    }

    pub fn push(&self, line: Line) {
        self.lines().push(line);
        self.grew.notify_all();
    }

    fn lines(&self) -> MutexGuard<'_, Vec<Line>> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The reports (stdout lines) of `run` so far.
    pub fn reports(&self, run: usize) -> Vec<String> {
        self.lines()
            .iter()
            .filter(|l| l.run == run && !l.log)
            .map(|l| l.text.clone())
            .collect()
    }

    /// The reports of every run so far, in arrival order.
    pub fn all_reports(&self) -> Vec<String> {
        self.lines()
            .iter()
            .filter(|l| !l.log)
            .map(|l| l.text.clone())
            .collect()
    }

    /// The reports of every run so far, in arrival order, each with its
    /// run.
    pub fn all_reports_by_run(&self) -> Vec<(usize, String)> {
        self.lines()
            .iter()
            .filter(|l| !l.log)
            .map(|l| (l.run, l.text.clone()))
            .collect()
    }

    /// Waits until `done` holds of the lines, for at most `limit`; panics
    /// with `what` and every process's last lines past it.
    pub fn await_that(&self, limit: Duration, what: &str, done: impl FnMut(&[Line]) -> bool) {
        if !self.wait_for(limit, done) {
            panic!(
                "timed out after {limit:?} waiting for {what}\n{}every line: {}",
                self.tail(),
                self.save().display()
            );
        }
    }

    /// Waits until `done` holds of the lines, for at most `limit`;
    /// whether it did.
    pub fn wait_for(&self, limit: Duration, mut done: impl FnMut(&[Line]) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let mut lines = self.lines();
        while !done(&lines) {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            lines = self
                .grew
                .wait_timeout(lines, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// Writes every line of every process, in arrival order, to a file
    /// in the temporary folder, for a failure a tail cannot explain;
    /// returns its path.
    pub fn save(&self) -> std::path::PathBuf {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut out = String::new();
        let lines = self.lines();
        let first_us = lines.first().map_or(0, |l| l.at_us);
        for line in lines.iter() {
            let tag = if line.log { "log" } else { "out" };
            let ms = line.at_us.saturating_sub(first_us) as f64 / 1000.0;
            let name = &names[line.run];
            out.push_str(&format!("{ms:>10.1} {name} {tag}| {}\n", line.text));
        }
        drop(lines);
        let path = std::env::temp_dir().join(format!(
            "volley-processes-{}-{}.log",
            std::process::id(),
            super::singleton::now_us()
        ));
        std::fs::write(&path, out).expect("the temporary folder is writable");
        path
    }

    /// Each process's last lines, for a failure message.
    pub fn tail(&self) -> String {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let lines = self.lines();
        let mut out = String::new();
        for (run, name) in names.iter().enumerate() {
            let own: Vec<&Line> = lines.iter().filter(|l| l.run == run).collect();
            out.push_str(&format!(
                "--- {name}: last {} lines\n",
                SHOWN.min(own.len())
            ));
            for line in own.iter().skip(own.len().saturating_sub(SHOWN)) {
                let tag = if line.log { "log" } else { "out" };
                out.push_str(&format!("  {tag}| {}\n", line.text));
            }
        }
        out
    }
}
