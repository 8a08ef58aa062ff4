//! One member as the driver sees it: a `cluster-node` JVM of the Pekko
//! Cluster peer (`bench/peers/pekko-cluster`), its stdin for commands,
//! its event lines forwarded to the driver's channel, its stderr in a log
//! file.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
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
    /// Starts `java -jar <jar> cluster-node ...` as node `index`; its lines
    /// go to `events`, its stderr to `log`.
    pub fn start(
        jar: &Path,
        index: usize,
        args: &[String],
        log: &Path,
        events: Sender<Line>,
    ) -> crate::Result<NodeProcess> {
        let mut child = Command::new("java")
            .arg("-jar")
            .arg(jar)
            .arg("cluster-node")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(log)?)
            .spawn()
            .map_err(|e| format!("cannot start java: {e}"))?;
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

    /// The process id (the JVM's: `java` execs it).
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
