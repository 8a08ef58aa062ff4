//! `grpc`: grpc_bench's `complex_proto` Greeter under ghz, its load tool,
//! with grpc_bench's parameters (`--insecure`, 1000 calls in flight over
//! 50 connections, a warm-up run, then the measured run): the volley
//! gateway on either dispatcher, a bare tonic Greeter, grpc-go's
//! (`go_peer.rs`, built with `go build`) and Pekko gRPC's (`pekko_peer.rs`,
//! built with Maven, run on the JVM). Each server is
//! a process of its own (`servers.rs`); on a machine with two or more
//! cores the server is pinned to CPU 0 and ghz to CPU 1 (`taskset`), so
//! that they do not fight over one core.
//!
//! ghz is installed with `go install` when it is missing (and Go is there).

mod go_peer;
mod pekko_peer;
pub mod servers;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{Ctx, Scenario};
use crate::measure::median_by;
use crate::progress::Progress;
use crate::report::grpc_rows::GrpcRow;
use crate::report::{measured, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "grpc",
    about: "gRPC Greeter (grpc_bench complex_proto) under ghz: volley gateway vs bare tonic, req/s and latency",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// The ghz grpc_bench used, installed when missing.
const GHZ_MODULE: &str = "github.com/bojand/ghz/cmd/ghz@v0.121.0";

/// grpc_bench's payload.
const PAYLOAD: &str = r#"{"request":{"name":"a name","d":4.55332,"f":232.3,"b":true,"n":32,"l":444325235223,"c1":"ofcouse","pets":[{"name":"Bof the dog","color":"BLUE"},{"name":"Kim the cat","color":"RED"}]}}"#;

/// (system, volley mode, server kind).
const TARGETS: [(&str, Option<&str>, &str); 5] = [
    ("volley", Some("default"), "volley-default"),
    ("volley", Some("app-runtime"), "volley-app-runtime"),
    ("tonic", None, "tonic"),
    ("grpc-go", None, GO_KIND),
    ("pekko-grpc", None, PEKKO_KIND),
];

/// The server kind run by the grpc-go harness instead of this binary.
const GO_KIND: &str = "grpc-go";
/// The server kind run by the Pekko gRPC harness (a jar) instead of this binary.
const PEKKO_KIND: &str = "pekko-grpc";

/// The JVM peer's least warm-up: its JIT compilers share the server's one
/// core with the service, and after grpc_bench's shorter warm-ups it is
/// still compiling (server CPU per call many times its settled figure).
const JVM_WARMUP: Duration = Duration::from_secs(15);

/// How a server process is started.
pub(crate) enum Launch {
    /// `volley-bench grpc-server KIND PORT`.
    Bench(&'static str),
    /// `PROGRAM ARGS.. PORT`, a peer's harness.
    Program {
        exe: PathBuf,
        args: Vec<String>,
        kind: &'static str,
    },
}

impl Launch {
    /// How `kind` is started: a peer harness, built first, or this binary.
    fn of(kind: &'static str, ctx: &Ctx, progress: &Progress) -> Result<Launch, String> {
        let no_build = ctx.cli.no_build;
        match kind {
            GO_KIND => Ok(Launch::Program {
                exe: go_peer::greeter(&ctx.root, progress, no_build)?,
                args: Vec::new(),
                kind,
            }),
            PEKKO_KIND => {
                let (exe, args) = pekko_peer::greeter(&ctx.root, progress, no_build)?;
                Ok(Launch::Program { exe, args, kind })
            }
            _ => Ok(Launch::Bench(kind)),
        }
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<GrpcRow>> {
    let mut report = Report::new("grpc", crate::chart::grpc);
    let runs = ctx.cli.runs();
    let progress = Progress::new((TARGETS.len() * runs) as u64);
    let (warmup, measure) = if ctx.cli.quick {
        (Duration::from_secs(2), Duration::from_secs(5))
    } else {
        (Duration::from_secs(5), Duration::from_secs(20))
    };
    let pinning = Pinning::detect();
    progress.note(&format!("cpus: {}", pinning.label()));
    let ghz = match ghz(&progress, ctx.cli.no_build) {
        Ok(ghz) => ghz,
        Err(why) => {
            progress.finish();
            for (system, _, _) in TARGETS {
                report
                    .rows
                    .push(Row::skipped(system, &format!("no ghz: {why}")));
            }
            return Ok(report);
        }
    };
    let proto = ctx.root.join("crates/volley-grpc/proto/helloworld.proto");
    for (system, mode, kind) in TARGETS {
        let launch = match Launch::of(kind, ctx, &progress) {
            Ok(launch) => launch,
            Err(why) => {
                for _ in 0..runs {
                    progress.done();
                }
                report.rows.push(Row::skipped(system, &why));
                continue;
            }
        };
        let mut measured_runs = Vec::new();
        let mut failure = None;
        for i in 0..runs {
            progress.start(&format!(
                "{system} {} (run {}/{runs})",
                mode.unwrap_or(""),
                i + 1
            ));
            let warmup = if kind == PEKKO_KIND {
                warmup.max(JVM_WARMUP)
            } else {
                warmup
            };
            match measure_one(&ghz, &proto, &launch, &pinning, warmup, measure) {
                Ok(row) => measured_runs.push(GrpcRow {
                    mode: mode.map(str::to_string),
                    ..row
                }),
                Err(e) => failure = Some(e.to_string()),
            }
            progress.done();
        }
        match median_by(measured_runs, |r| r.rps) {
            Some(row) => report.rows.push(Row::measured(system, row)),
            None => report.rows.push(Row::skipped(
                system,
                &failure.unwrap_or_else(|| "no run".into()),
            )),
        }
    }
    progress.finish();
    report.notes = notes(&report);
    Ok(report)
}

/// The gateway against bare tonic, with issue 15's targets, and against
/// the other peers (issue 15 wants it ahead of grpc-go and Pekko gRPC).
fn notes(report: &Report<GrpcRow>) -> Vec<String> {
    let rows: Vec<_> = measured(&report.rows).collect();
    let Some((_, tonic)) = rows.iter().find(|(s, _)| *s == "tonic") else {
        return Vec::new();
    };
    let peers: Vec<_> = rows
        .iter()
        .filter(|(s, _)| *s == "grpc-go" || *s == "pekko-grpc")
        .collect();
    rows.iter()
        .filter(|(s, _)| *s == "volley")
        .map(|(_, v)| {
            let rps = v.rps / tonic.rps;
            let p99 = v.p99_ns as f64 / tonic.p99_ns.max(1) as f64;
            let vs_peers: String = peers
                .iter()
                .map(|(name, g)| {
                    format!(
                        "; / {name}: req/s {:.2}× ({}), server CPU per call {:.2}×",
                        v.rps / g.rps,
                        crate::report::verdict(v.rps > g.rps),
                        v.server_cpu_us_per_call / g.server_cpu_us_per_call.max(f64::MIN_POSITIVE)
                    )
                })
                .collect();
            format!(
                "volley ({}) / tonic: req/s {rps:.2}× (target ≥ 0.9×: {}), p99 {p99:.2}× (target ≤ 1.2×: {}){vs_peers}",
                v.mode.as_deref().unwrap_or(""),
                crate::report::verdict(rps >= 0.9),
                crate::report::verdict(p99 <= 1.2),
            )
        })
        .collect()
}

/// Which CPUs the server and ghz get.
pub(crate) struct Pinning {
    taskset: Option<PathBuf>,
}

impl Pinning {
    pub(crate) fn detect() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let taskset = which("taskset").filter(|_| cores >= 2);
        Pinning { taskset }
    }

    pub(crate) fn label(&self) -> String {
        match self.taskset {
            Some(_) => "server 0, ghz 1".into(),
            None => "unpinned".into(),
        }
    }

    /// `program args` on `cpu`, or as it is when unpinned.
    pub(crate) fn command(&self, cpu: u32, program: &Path, args: &[&str]) -> Command {
        match &self.taskset {
            Some(taskset) => {
                let mut c = Command::new(taskset);
                c.arg("-c").arg(cpu.to_string()).arg(program).args(args);
                c
            }
            None => {
                let mut c = Command::new(program);
                c.args(args);
                c
            }
        }
    }
}

/// One server, one warm-up run and one measured run of ghz.
fn measure_one(
    ghz: &Path,
    proto: &Path,
    launch: &Launch,
    pinning: &Pinning,
    warmup: Duration,
    measure: Duration,
) -> crate::Result<GrpcRow> {
    let port = free_port()?;
    let server = Server::start(pinning, launch, port)?;
    let target = format!("127.0.0.1:{port}");
    load(ghz, proto, &target, pinning, warmup)?;
    let cpu_before = cpu_time(server.0.id())?;
    let result = load(ghz, proto, &target, pinning, measure)?;
    let cpu = cpu_time(server.0.id())? - cpu_before;
    drop(server);
    let mut row = parse(&result, &pinning.label())?;
    let answered = row.requests.max(1);
    row.server_cpu_us_per_call =
        (cpu.as_secs_f64() * 1e6 / answered as f64 * 100.0).round() / 100.0;
    Ok(row)
}

/// User plus system CPU time of process `pid` so far (`/proc/PID/stat`).
pub(crate) fn cpu_time(pid: u32) -> crate::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name, which is in parentheses and may hold
    // spaces: utime and stime are the 12th and 13th of those.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let ticks = fields.iter().sum::<u64>();
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// A server process; stopped (stdin closed, then killed) when dropped.
pub(crate) struct Server(Child);

impl Server {
    pub(crate) fn start(pinning: &Pinning, launch: &Launch, port: u16) -> crate::Result<Server> {
        let port = port.to_string();
        let (exe, args, kind) = match launch {
            Launch::Bench(kind) => (
                std::env::current_exe()?,
                vec![servers::SERVER_COMMAND, kind, &port],
                *kind,
            ),
            Launch::Program { exe, args, kind } => {
                let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
                all.push(&port);
                (exe.clone(), all, *kind)
            }
        };
        let mut child = pinning
            .command(0, &exe, &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        if line.trim() != "ready" {
            let _ = child.kill();
            return Err(format!("the {kind} server did not start").into());
        }
        Ok(Server(child))
    }
}

impl Server {
    /// The server process's id.
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        for _ in 0..100 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port nobody listens on now.
pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Runs ghz against `target` for `duration`; its JSON report.
fn load(
    ghz: &Path,
    proto: &Path,
    target: &str,
    pinning: &Pinning,
    duration: Duration,
) -> crate::Result<Value> {
    let proto = proto.to_string_lossy();
    let duration = format!("{}s", duration.as_secs());
    let output = pinning
        .command(
            1,
            ghz,
            &[
                "--insecure",
                "--proto",
                &proto,
                "--call",
                "helloworld.Greeter.SayHello",
                "--concurrency",
                "1000",
                "--connections",
                "50",
                "--duration",
                &duration,
                "--data",
                PAYLOAD,
                "--format",
                "json",
                target,
            ],
        )
        .stderr(Stdio::inherit())
        .output()?;
    if !output.status.success() {
        return Err(format!("ghz failed ({})", output.status).into());
    }
    Ok(serde_json::from_slice(&output.stdout)?)
}

/// A row from ghz's JSON report.
fn parse(report: &Value, cpus: &str) -> crate::Result<GrpcRow> {
    let number = |key: &str| report.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let percentile = |p: u64| {
        report
            .get("latencyDistribution")
            .and_then(Value::as_array)
            .and_then(|d| {
                d.iter()
                    .find(|e| e.get("percentage").and_then(Value::as_u64) == Some(p))
            })
            .and_then(|e| e.get("latency").and_then(Value::as_u64))
            .unwrap_or(0)
    };
    let ok = report
        .pointer("/statusCodeDistribution/OK")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    // ghz closes its connections when its duration runs out, failing the
    // calls still in flight on its own side: not the server's errors.
    let errors = report
        .get("errorDistribution")
        .and_then(Value::as_object)
        .map_or(0, |errors| {
            errors
                .iter()
                .filter(|(what, _)| !what.contains("use of closed network connection"))
                .map(|(_, n)| n.as_u64().unwrap_or(0))
                .sum()
        });
    if ok == 0 {
        return Err(format!("ghz counted no OK call ({errors} errors)").into());
    }
    Ok(GrpcRow {
        mode: None,
        requests: ok,
        rps: number("rps"),
        avg_ns: number("average") as u64,
        p50_ns: percentile(50),
        p99_ns: percentile(99),
        errors,
        server_cpu_us_per_call: 0.0,
        cpus: cpus.to_string(),
    })
}

/// ghz: on the PATH, in Go's bin directory, or installed there now.
fn ghz(progress: &Progress, no_build: bool) -> Result<PathBuf, String> {
    if let Some(found) = which("ghz").or_else(go_bin_ghz) {
        return Ok(found);
    }
    if no_build {
        return Err("not installed (--no-build)".into());
    }
    let go = which("go").ok_or("not installed, and no Go to install it with")?;
    progress.note(&format!("installing ghz: go install {GHZ_MODULE}"));
    let status = progress.suspend(|| Command::new(go).args(["install", GHZ_MODULE]).status());
    match status {
        Ok(s) if s.success() => go_bin_ghz().ok_or_else(|| "go install left no ghz".into()),
        Ok(s) => Err(format!("go install {GHZ_MODULE} failed ({s})")),
        Err(e) => Err(format!("cannot run go: {e}")),
    }
}

/// `$(go env GOPATH)/bin/ghz`, if it is there.
fn go_bin_ghz() -> Option<PathBuf> {
    let out = Command::new(which("go")?)
        .args(["env", "GOPATH"])
        .output()
        .ok()?;
    let gopath = String::from_utf8(out.stdout).ok()?;
    let ghz = Path::new(gopath.trim()).join("bin/ghz");
    ghz.is_file().then_some(ghz)
}

/// `name` on the PATH.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ghz_report_becomes_a_row_without_the_calls_ghz_cut_itself() {
        let report: Value = serde_json::from_str(
            r#"{"count": 1210, "rps": 8000.5, "average": 1500000,
                "latencyDistribution": [
                    {"percentage": 50, "latency": 1000000},
                    {"percentage": 99, "latency": 9000000}],
                "statusCodeDistribution": {"OK": 1000, "Unavailable": 210},
                "errorDistribution": {
                    "rpc error: code = Unavailable desc = error reading from server: read tcp 1->2: use of closed network connection": 200,
                    "rpc error: code = Unavailable desc = connection refused": 10}}"#,
        )
        .unwrap();
        let row = parse(&report, "server 0, ghz 1").unwrap();
        assert_eq!(row.requests, 1000);
        assert_eq!(row.errors, 10);
        assert_eq!(
            (row.p50_ns, row.p99_ns, row.avg_ns),
            (1_000_000, 9_000_000, 1_500_000)
        );
        assert_eq!(row.rps, 8000.5);
        let none_ok: Value =
            serde_json::from_str(r#"{"statusCodeDistribution": {"Unavailable": 5}}"#).unwrap();
        assert!(parse(&none_ok, "unpinned").is_err());
    }
}
