//! One node process as the test sees it: started from this test binary,
//! its stdout and stderr collected in the [`Transcript`], its stdin for
//! commands. Dropping it kills the process.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::config::{NodeConfig, NODE_ENV};
use super::transcript::{Line, Transcript};

pub struct NodeProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    /// This process's run in the transcript.
    pub run: usize,
}

impl NodeProcess {
    /// Starts a node with `config`, its lines tagged as `name`.
    pub fn start(config: &NodeConfig, name: String, transcript: &Arc<Transcript>) -> NodeProcess {
        let exe = std::env::current_exe().expect("the test binary");
        let mut child = Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "processes::cluster_node",
                "--nocapture",
            ])
            .env(NODE_ENV, config.encode())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the node process starts");
        let run = transcript.new_run(name);
        collect(child.stdout.take().expect("piped"), run, false, transcript);
        collect(child.stderr.take().expect("piped"), run, true, transcript);
        NodeProcess {
            stdin: child.stdin.take(),
            child,
            run,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one command line to the node's stdin.
    pub fn command(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("the node's stdin is open");
        writeln!(stdin, "{line}").expect("the node reads its stdin");
        stdin.flush().expect("the node reads its stdin");
    }

    /// kill -9.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `signal` (`STOP`, `CONT`) to the process.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {}", self.pid());
    }

    /// Tells the node to exit and waits up to `limit` for it; whether it
    /// exited by itself (it is killed otherwise).
    pub fn exit(&mut self, limit: Duration) -> bool {
        let _ = self.stdin.as_mut().map(|s| writeln!(s, "exit"));
        self.stdin = None;
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return true;
            }
            // Polls the exit status: no event tells a parent of it.
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        false
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

fn collect(from: impl Read + Send + 'static, run: usize, log: bool, to: &Arc<Transcript>) {
    let to = to.clone();
    std::thread::spawn(move || {
        for text in BufReader::new(from).lines().map_while(Result::ok) {
            let at_us = super::singleton::now_us();
            to.push(Line {
                run,
                log,
                text,
                at_us,
            });
        }
    });
}
