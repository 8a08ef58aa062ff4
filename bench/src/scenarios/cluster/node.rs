//! One member as the driver sees it: a `cluster-node` process (a JVM of
//! the Pekko Cluster peer, `bench/peers/pekko-cluster`, or this binary's
//! own volley member), its stdin for commands, its event lines forwarded
//! to the driver's channel, its stderr in a log file.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::view::Event;
use super::Timings;

/// What a node's reader thread forwards: an event, or a line that is not one.
pub type Line = (usize, Result<Event, String>);

/// A running member; dropping it kills the process.
pub struct NodeProcess {
    child: Child,
    stdin: Option<ChildStdin>,
}

/// How to start one member of a system: a program and the arguments
/// before the node's own.
#[derive(Debug, Clone)]
pub struct Program {
    /// The system's name in the rows: `volley` or `pekko`.
    pub system: &'static str,
    pub command: PathBuf,
    pub leading: Vec<String>,
}

impl Program {
    /// `java -jar <jar> cluster-node`.
    pub fn pekko(jar: &Path) -> Program {
        Program {
            system: "pekko",
            command: "java".into(),
            leading: vec![
                "-jar".into(),
                jar.display().to_string(),
                "cluster-node".into(),
            ],
        }
    }

    /// This binary's `cluster-node`.
    pub fn volley() -> std::io::Result<Program> {
        Ok(Program {
            system: "volley",
            command: std::env::current_exe()?,
            leading: vec![super::volley_member::NODE_COMMAND.into()],
        })
    }
}

/// The command for node `port` joining through `seeds` (all on
/// 127.0.0.1).
pub fn node_args(port: u16, seeds: &[u16], timings: &Timings) -> Vec<String> {
    let seeds: Vec<String> = seeds.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    [
        ("--port", port.to_string()),
        ("--seeds", seeds.join(",")),
        ("--heartbeat-ms", timings.heartbeat_ms.to_string()),
        ("--pause-ms", timings.pause_ms.to_string()),
        ("--stable-after-ms", timings.stable_after_ms.to_string()),
    ]
    .into_iter()
    .flat_map(|(k, v)| [k.to_string(), v])
    .collect()
}

impl NodeProcess {
    /// Starts `program` as node `index`; its lines go to `events`, its
    /// stderr to `log`.
    pub fn start(
        program: &Program,
        index: usize,
        args: &[String],
        log: &Path,
        events: Sender<Line>,
    ) -> crate::Result<NodeProcess> {
        let mut child = Command::new(&program.command)
            .args(&program.leading)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(log)?)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.command.display()))?;
        let stdout = child.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.trim().is_empty() {
                    continue;
                }
                if events.send((index, Event::parse(&line))).is_err() {
                    break;
                }
            }
        });
        Ok(NodeProcess {
            stdin: child.stdin.take(),
            child,
        })
    }

    /// Sends a stdin command (`register`, `leave`, `exit`).
    pub fn command(&mut self, command: &str) -> crate::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or("the node's stdin is already closed")?;
        writeln!(stdin, "{command}")?;
        stdin.flush()?;
        Ok(())
    }

    /// The process id (for a JVM, the JVM's: `java` execs it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// kill -9.
    pub fn kill(&mut self) -> crate::Result<()> {
        self.child.kill()?;
        Ok(())
    }

    /// Closes stdin (the node leaves and stops) and waits up to `grace`
    /// for it to exit; kills it after that.
    pub fn stop(mut self, grace: Duration) {
        self.stdin = None;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        // No orphan JVM may outlive the driver, whatever failed.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
