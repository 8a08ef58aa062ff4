//! The kontraktor peer (`bench/peers/kontraktor`): kontraktor 4.22's TCP
//! remoting in two JVMs, a server publishing the summing actor and a client
//! running one test. Built with Maven when missing (or always, unless
//! `--no-build`: `mvn package` is a no-op when nothing changed), skipped
//! with the reason when Java or Maven is missing.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::Deserialize;

use super::row::{KontraktorRow, Test};
use super::verify::{SumCheck, Tally};
use crate::measure::median_by;
use crate::peers::on_path;
use crate::progress::Progress;

/// The jar, built if need be; `Err` is why kontraktor is skipped.
pub fn jar(root: &Path, progress: &Progress, no_build: bool) -> Result<PathBuf, String> {
    let dir = root.join("bench/peers/kontraktor");
    let jar = dir.join("target/kontraktor-bench.jar");
    if !on_path("java") {
        return Err("java not found on PATH (JDK 17 needed for the kontraktor peer)".into());
    }
    if no_build {
        return if jar.is_file() {
            Ok(jar)
        } else {
            Err("not built (--no-build; run bench/peers/build.sh)".into())
        };
    }
    if !on_path("mvn") {
        return Err("mvn not found on PATH (Maven needed to build the kontraktor peer)".into());
    }
    progress.note("building bench/peers/kontraktor (mvn package, output on stderr)");
    let status = progress.suspend(|| {
        Command::new("mvn")
            .current_dir(&dir)
            .args(["-q", "-B", "package", "-DskipTests"])
            .stdin(Stdio::null())
            .stdout(std::io::stderr())
            .stderr(std::io::stderr())
            .status()
    });
    match status {
        Ok(s) if s.success() && jar.is_file() => Ok(jar),
        Ok(s) => Err(format!("mvn package in {} failed ({s})", dir.display())),
        Err(e) => Err(format!("cannot run mvn: {e}")),
    }
}

/// The client's command line for one test.
pub fn client_args(port: u16, test: Test, messages: u64, runs: usize) -> Vec<String> {
    let mut args = vec!["client".into(), "--port".into(), port.to_string()];
    args.extend(run_args(test, messages, runs, "--warmup"));
    args
}

/// The flags a JVM client takes for one test: `--test`, `--messages`,
/// `--runs` and a warm-up of half a run under `warmup_flag`.
pub fn run_args(test: Test, messages: u64, runs: usize, warmup_flag: &str) -> Vec<String> {
    let warmup = (messages / 2).max(1);
    [
        "--test",
        test.name(),
        "--messages",
        &messages.to_string(),
        "--runs",
        &runs.to_string(),
        warmup_flag,
        &warmup.to_string(),
    ]
    .map(String::from)
    .to_vec()
}

/// One run as the client prints it (its other fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct ClientLine {
    pub test: String,
    pub messages: u64,
    pub msgs_per_s: f64,
    pub in_flight: Option<u64>,
    pub client_count: u64,
    pub wrong: u64,
    pub client_sum: i64,
    pub server_count: u64,
    pub server_sum: i64,
}

impl ClientLine {
    /// The check, done again here: the JVM's own `verified` is not trusted.
    pub fn check(&self) -> SumCheck {
        SumCheck {
            expected: Tally::seed_pairs(self.messages),
            sender: Tally::new(self.client_count, self.client_sum),
            wrong: self.wrong,
            receiver: Tally::new(self.server_count, self.server_sum),
        }
    }
}

/// The client's result lines for `test`; any other stdout line is passed to
/// stderr (kontraktor may log there).
pub fn parse_client(stdout: &str, test: Test) -> Result<Vec<ClientLine>, String> {
    parse_result_lines("kontraktor", stdout, test)
}

/// `system`'s client's result lines (JSON objects in [`ClientLine`]'s
/// shape) for `test`; any other stdout line is passed to stderr.
pub fn parse_result_lines(
    system: &str,
    stdout: &str,
    test: Test,
) -> Result<Vec<ClientLine>, String> {
    let mut lines = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !line.starts_with('{') {
            eprintln!("{system}: {line}");
            continue;
        }
        let parsed: ClientLine = serde_json::from_str(line)
            .map_err(|e| format!("{system}: a result line does not parse ({e}): {line}"))?;
        if parsed.test != test.name() {
            return Err(format!(
                "{system}: a {} line in the {} test",
                parsed.test,
                test.name()
            ));
        }
        lines.push(parsed);
    }
    if lines.is_empty() {
        return Err(format!("{system}: the client printed no result"));
    }
    Ok(lines)
}

/// The median run as a row; `verified` only when every run passed.
pub fn row(lines: Vec<ClientLine>) -> Result<KontraktorRow, String> {
    median_row("kontraktor", |_| "1 actor".into(), lines)
}

/// `system`'s median run as a row, its sender named by `sender` for the
/// test; `verified` only when every run passed the check done here (the
/// JVM's own `verified` is not trusted), and a failed one is said on
/// stderr.
pub fn median_row(
    system: &str,
    sender: impl Fn(Test) -> String,
    lines: Vec<ClientLine>,
) -> Result<KontraktorRow, String> {
    let failures: Vec<String> = lines
        .iter()
        .filter_map(|l| l.check().verify().err())
        .collect();
    let test = match lines.first().map(|l| l.test.as_str()) {
        Some("tell") => Test::Tell,
        Some("ask") => Test::Ask,
        other => return Err(format!("{system}: no result or unknown test {other:?}")),
    };
    if !failures.is_empty() {
        eprintln!(
            "{system} {}: NOT verified: {}",
            test.name(),
            failures.join(" | ")
        );
    }
    let median = median_by(lines, |l| l.msgs_per_s).expect("at least one line");
    Ok(KontraktorRow {
        test,
        sender: sender(test),
        msgs_per_s: median.msgs_per_s,
        in_flight: median.in_flight,
        verified: failures.is_empty(),
    })
}

/// A peer's server JVM; killed when dropped (its stdin closes first).
pub struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` as a server JVM serving until its stdin closes, and waits
/// (up to 60 s) for its `"listening"` line, which is returned; its other
/// stdout lines go to stderr after `who`.
pub fn start_listening(mut cmd: Command, who: &'static str) -> Result<(Server, String), String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start java: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("\"listening\"") {
                let _ = tx.send(line);
            } else {
                eprintln!("{who}: {line}");
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| format!("the {who} did not start listening within 60 s"))?;
    Ok((server, line))
}

/// Starts the server JVM on a free port and waits for its `listening` line.
fn start_server(jar: &Path) -> Result<(Server, u16), String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let mut cmd = Command::new("java");
    cmd.arg("-jar")
        .arg(jar)
        .args(["server", "--port", &port.to_string()]);
    let (server, _) = start_listening(cmd, "kontraktor server")?;
    Ok((server, port))
}

/// Runs `test` with `messages` pairs, `runs` times after a warm-up, in a
/// fresh pair of JVMs.
pub fn measure(
    jar: &Path,
    test: Test,
    messages: u64,
    runs: usize,
) -> Result<KontraktorRow, String> {
    let (server, port) = start_server(jar)?;
    let mut cmd = Command::new("java");
    cmd.arg("-jar")
        .arg(jar)
        .args(client_args(port, test, messages, runs));
    let stdout = run_client(cmd, "kontraktor");
    drop(server);
    row(parse_client(&stdout?, test)?)
}

/// Runs a client JVM to its end: its stdout, or why it failed (its stdout
/// then goes to stderr).
pub fn run_client(mut cmd: Command, who: &str) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start the {who} client: {e}"))?;
    if !out.status.success() {
        let _ = std::io::stderr().write_all(out.stdout.as_slice());
        return Err(format!("the {who} client failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"scenario":"kontraktor","system":"kontraktor","test":"ask","messages":1000,"elapsed_ns":5,"msgs_per_s":RATE,"in_flight":700,"client_count":1000,"wrong":0,"client_sum":1000000,"server_count":1000,"server_sum":SERVER_SUM,"expected_sum":1000000,"verified":true}"#;

    fn line(rate: f64, server_sum: i64) -> String {
        LINE.replace("RATE", &rate.to_string())
            .replace("SERVER_SUM", &server_sum.to_string())
    }

    #[test]
    fn the_client_gets_the_test_and_sizes() {
        let args = client_args(7001, Test::Ask, 1_000_000, 3).join(" ");
        assert_eq!(
            args,
            "client --port 7001 --test ask --messages 1000000 --runs 3 --warmup 500000"
        );
    }

    #[test]
    fn the_median_run_is_the_row_and_a_verified_one_says_so() {
        let out = [
            line(3.0, 1_000_000),
            line(1.0, 1_000_000),
            line(2.0, 1_000_000),
        ]
        .join("\n");
        let lines = parse_client(&format!("connected\n{out}\n"), Test::Ask).unwrap();
        let r = row(lines).unwrap();
        assert_eq!(
            (r.test, r.msgs_per_s, r.in_flight),
            (Test::Ask, 2.0, Some(700))
        );
        assert!(r.verified);
    }

    #[test]
    fn a_wrong_server_sum_is_not_verified_whatever_the_jvm_says() {
        let out = [line(3.0, 1_000_000), line(1.0, 999_999)].join("\n");
        let r = row(parse_client(&out, Test::Ask).unwrap()).unwrap();
        assert!(!r.verified);
    }

    #[test]
    fn bad_client_output_is_an_error() {
        assert!(parse_client("", Test::Tell).is_err());
        assert!(parse_client("{\"test\":\"tell\"}", Test::Tell).is_err());
        let ask = line(1.0, 1_000_000);
        assert!(parse_client(&ask, Test::Tell)
            .unwrap_err()
            .contains("ask line"));
    }
}
