//! `web`: volley's web gateway (`volley-web`) against a bare axum echo
//! server that reads and answers the same frames with no actor (the
//! ceiling, `echo.rs`). Ask round trips with 1 and 100 clients, over a
//! WebSocket and over long-poll; and one actor pushing to 1,000 subscribed
//! WebSocket clients, with the server's memory per idle session.
//!
//! Each server is a process of its own (`servers.rs`), and so are its
//! clients (`load.rs`): this binary re-run through hidden subcommands. On
//! a machine with two or more cores the server is pinned to CPU 0 and the
//! clients to CPU 1, as in `grpc`.

pub mod echo;
pub mod load;
mod lp_client;
pub mod servers;
mod ws_client;

use std::process::Stdio;
use std::time::Duration;

use super::grpc::{free_port, Launch, Pinning, Server};
use super::{Ctx, Scenario};
use crate::measure::median_by;
use crate::progress::Progress;
use crate::report::web_rows::WebRow;
use crate::report::{measured, verdict, Report, Row};
use load::{LoadResult, LOAD_COMMAND};

pub const SCENARIO: Scenario = Scenario {
    name: "web",
    about: "web gateway: asks over WebSocket and long-poll vs a bare axum echo server, push to 1,000 clients, memory per session",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// (system, server kind).
const SYSTEMS: [(&str, &str); 2] = [("volley", "volley"), ("axum-echo", "echo")];
/// (transport, load mode) of the ask rows.
const TRANSPORTS: [(&str, &str); 2] = [("websocket", "ws"), ("long-poll", "lp")];
const ASK_CLIENTS: [u64; 2] = [1, 100];
/// The push row's subscribed clients.
const PUSH_CLIENTS: u64 = 1000;

/// One configuration to measure.
struct Config {
    system: &'static str,
    kind: &'static str,
    transport: &'static str,
    mode: &'static str,
    clients: u64,
}

fn configs() -> Vec<Config> {
    let mut all = Vec::new();
    for (transport, mode) in TRANSPORTS {
        for clients in ASK_CLIENTS {
            for (system, kind) in SYSTEMS {
                all.push(Config {
                    system,
                    kind,
                    transport,
                    mode,
                    clients,
                });
            }
        }
    }
    all.push(Config {
        system: "volley",
        kind: "volley",
        transport: "websocket-push",
        mode: "push",
        clients: PUSH_CLIENTS,
    });
    all
}

fn run(ctx: &Ctx) -> crate::Result<Report<WebRow>> {
    let mut report = Report::new("web", crate::chart::web);
    let runs = ctx.cli.runs();
    let (warmup, measure) = if ctx.cli.quick {
        (Duration::from_secs(1), Duration::from_secs(3))
    } else {
        (Duration::from_secs(2), Duration::from_secs(8))
    };
    let configs = configs();
    let progress = Progress::new((configs.len() * runs) as u64);
    let pinning = Pinning::detect();
    for config in configs {
        let mut results = Vec::new();
        let mut failure = None;
        for i in 0..runs {
            progress.start(&format!(
                "{} {} {} clients (run {}/{runs})",
                config.system,
                config.transport,
                config.clients,
                i + 1
            ));
            match measure_one(&config, &pinning, warmup, measure) {
                Ok(result) => results.push(row(&config, &result)),
                Err(e) => failure = Some(e.to_string()),
            }
            progress.done();
        }
        match median_by(results, |r| r.rps.unwrap_or(0.0)) {
            Some(row) => report.rows.push(Row::measured(config.system, row)),
            None => report.rows.push(Row::skipped(
                config.system,
                &failure.unwrap_or_else(|| "no run".into()),
            )),
        }
    }
    progress.finish();
    report.notes = notes(&report, &pinning);
    Ok(report)
}

/// A fresh server, and one load process against it.
fn measure_one(
    config: &Config,
    pinning: &Pinning,
    warmup: Duration,
    measure: Duration,
) -> crate::Result<LoadResult> {
    let port = free_port()?;
    let launch = Launch::Program {
        exe: std::env::current_exe()?,
        args: vec![servers::SERVER_COMMAND.to_string(), config.kind.to_string()],
        kind: config.kind,
    };
    let server = Server::start(pinning, &launch, port)?;
    let args = [
        config.mode.to_string(),
        port.to_string(),
        config.clients.to_string(),
        warmup.as_millis().to_string(),
        measure.as_millis().to_string(),
        server.pid().to_string(),
    ];
    let mut all: Vec<&str> = vec![LOAD_COMMAND];
    all.extend(args.iter().map(String::as_str));
    let output = pinning
        .command(1, &std::env::current_exe()?, &all)
        .stderr(Stdio::inherit())
        .output()?;
    drop(server);
    if !output.status.success() {
        return Err(format!("the load process failed ({})", output.status).into());
    }
    parse_load(&String::from_utf8_lossy(&output.stdout))
}

/// The load process's result: its last stdout line.
fn parse_load(stdout: &str) -> crate::Result<LoadResult> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or("the load process printed nothing")?;
    Ok(serde_json::from_str(line)?)
}

/// The row of `config` from what its load process measured.
fn row(config: &Config, result: &LoadResult) -> WebRow {
    let seconds = result.elapsed_ns as f64 / 1e9;
    WebRow {
        transport: config.transport.to_string(),
        clients: config.clients,
        rps: (seconds > 0.0).then(|| (result.done as f64 / seconds).round()),
        p50_ns: result.p50_ns,
        p99_ns: result.p99_ns,
        bytes_per_session: result.bytes_per_session.map(f64::round),
    }
}

/// The gateway against the echo server per (transport, clients), and the
/// session's memory, with issue 32's targets.
fn notes(report: &Report<WebRow>, pinning: &Pinning) -> Vec<String> {
    let rows: Vec<_> = measured(&report.rows).collect();
    let mut notes = vec![format!(
        "cpus: {}",
        match pinning.label().as_str() {
            "unpinned" => "unpinned",
            _ => "server 0, clients 1",
        }
    )];
    for (_, v) in rows
        .iter()
        .filter(|(s, r)| *s == "volley" && r.p99_ns.is_some())
    {
        let Some((_, echo)) = rows.iter().find(|(s, r)| {
            *s == "axum-echo" && r.transport == v.transport && r.clients == v.clients
        }) else {
            continue;
        };
        let rps = v.rps.unwrap_or(0.0) / echo.rps.unwrap_or(f64::MAX).max(f64::MIN_POSITIVE);
        let p99 = v.p99_ns.unwrap_or(0) as f64 / echo.p99_ns.unwrap_or(1).max(1) as f64;
        notes.push(format!(
            "volley / axum-echo, {} {} clients: req/s {rps:.2}× (target ≥ 0.8×: {}), p99 {p99:.2}× (target ≤ 1.5×: {})",
            v.transport,
            v.clients,
            verdict(rps >= 0.8),
            verdict(p99 <= 1.5)
        ));
    }
    for (_, v) in rows.iter() {
        if let Some(bytes) = v.bytes_per_session {
            notes.push(format!(
                "volley session at rest: {bytes:.0} bytes (target ≤ 16 KiB: {})",
                verdict(bytes <= 16.0 * 1024.0)
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_line_becomes_a_row() {
        let stdout = "noise\n{\"done\":30000,\"elapsed_ns\":3000000000,\"p50_ns\":2000000,\"p99_ns\":5000000,\"bytes_per_session\":null}\n";
        let result = parse_load(stdout).unwrap();
        let ask = configs()
            .into_iter()
            .find(|c| c.mode == "lp" && c.clients == 100)
            .unwrap();
        let row = row(&ask, &result);
        assert_eq!(row.transport, "long-poll");
        assert_eq!(row.rps, Some(10000.0));
        assert_eq!(
            (row.p50_ns, row.p99_ns, row.bytes_per_session),
            (Some(2_000_000), Some(5_000_000), None)
        );
        let push = LoadResult {
            done: 2_000_000,
            elapsed_ns: 4_000_000_000,
            p50_ns: None,
            p99_ns: None,
            bytes_per_session: Some(9000.4),
        };
        let config = configs().pop().unwrap();
        let row = super::row(&config, &push);
        assert_eq!(
            (row.transport.as_str(), row.clients),
            ("websocket-push", 1000)
        );
        assert_eq!(
            (row.rps, row.bytes_per_session),
            (Some(500_000.0), Some(9000.0))
        );
        assert!(parse_load("").is_err());
    }

    #[test]
    fn notes_compare_the_gateway_with_the_echo_server() {
        let mut report = Report::new("web", |_, _| Ok(()));
        let ask = |rps: f64, p99: u64| WebRow {
            transport: "websocket".into(),
            clients: 100,
            rps: Some(rps),
            p50_ns: Some(1),
            p99_ns: Some(p99),
            bytes_per_session: None,
        };
        report.rows.push(Row::measured("volley", ask(900.0, 1200)));
        report
            .rows
            .push(Row::measured("axum-echo", ask(1000.0, 1000)));
        let notes = notes(&report, &Pinning::detect());
        assert!(
            notes[1].contains("req/s 0.90× (target ≥ 0.8×: met), p99 1.20× (target ≤ 1.5×: met)"),
            "{notes:?}"
        );
    }
}
