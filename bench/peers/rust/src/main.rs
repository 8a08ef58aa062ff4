//! `volley-peers`: runs volley's benchmark workloads on actix, ractor, kameo
//! and plain tokio channels, printing one JSON line per result on stdout.
//! See `bench/peers/README.md` for the contract and the setup of each system.

mod cli;
mod plan;
mod report;
mod systems;

use cli::{Command, USAGE};
use plan::Plan;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let cmd = match cli::parse(&args) {
        Ok(cmd) => cmd,
        Err(e) => return usage_error(&e.0),
    };
    match run(cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => usage_error(&msg),
        Err(Failure::Run(msg)) => {
            eprintln!("volley-peers: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("volley-peers: {msg}\n{USAGE}");
    ExitCode::from(2)
}

enum Failure {
    Usage(String),
    Run(String),
}

impl From<String> for Failure {
    fn from(msg: String) -> Self {
        Failure::Run(msg)
    }
}

fn run(cmd: Command) -> Result<(), Failure> {
    match cmd {
        Command::LocalPingPong {
            system,
            configs,
            messages,
            warmup,
        } => {
            // Validate every config before spending time on any of them.
            let mut plans = Vec::new();
            for c in &configs {
                let plan = Plan::new(c.pairs, c.inflight, messages).ok_or_else(|| {
                    Failure::Usage(format!(
                        "--messages {messages} is too small for {} pairs",
                        c.pairs
                    ))
                })?;
                plans.push(plan);
            }
            let mut h = systems::harness(system);
            for plan in plans {
                if warmup {
                    // Tiny configs may have no warmup round at all; fine.
                    if let Some(w) = Plan::new(plan.pairs, plan.inflight, messages / 10) {
                        eprintln!("{}: warmup {:?}", system.name(), w);
                        run_checked(h.as_mut(), &w)?;
                    }
                }
                eprintln!("{}: measuring {:?}", system.name(), plan);
                let out = run_checked(h.as_mut(), &plan)?;
                report::emit(report::pingpong(
                    system.name(),
                    plan.pairs,
                    plan.inflight,
                    out.received,
                    out.elapsed,
                ));
            }
        }
        Command::Spawn { system, actors } => {
            let out = systems::harness(system).spawn(actors)?;
            report::emit(report::spawn(
                system.name(),
                actors,
                out.spawn,
                out.stop,
                out.rss_growth,
            ));
        }
        Command::AskLocal { system, requests } => {
            let mut hist = report::new_histogram();
            systems::harness(system).ask(requests / 10, requests, &mut hist)?;
            if hist.len() != requests {
                return Err(Failure::Run(format!(
                    "recorded {} round trips, expected {requests}",
                    hist.len()
                )));
            }
            report::emit(report::ask(system.name(), requests, &hist));
        }
        Command::RemotePingPong {
            system,
            clients,
            repeat,
            inflight,
        } => remote_pingpong(system, &clients, repeat, inflight)?,
    }
    Ok(())
}

/// ractor_cluster's RemotePingPong: one JSON line per client count.
#[cfg(feature = "cluster")]
fn remote_pingpong(
    system: cli::System,
    clients: &[u64],
    repeat: u64,
    inflight: u64,
) -> Result<(), Failure> {
    systems::ractor_cluster_peer::remote_pingpong(
        clients,
        repeat,
        inflight,
        |c, total, elapsed| report::emit(report::remote_pingpong(system.name(), c, total, elapsed)),
    )?;
    Ok(())
}

#[cfg(not(feature = "cluster"))]
fn remote_pingpong(_: cli::System, _: &[u64], _: u64, _: u64) -> Result<(), Failure> {
    Err(Failure::Run(
        "this volley-peers is built without ractor_cluster; remote-pingpong needs the \
         `cluster` build: cargo build --release --manifest-path bench/peers/rust/Cargo.toml \
         --features cluster --target-dir bench/peers/rust/target/cluster"
            .into(),
    ))
}

/// Runs one round and fails unless every expected message was counted.
fn run_checked(h: &mut dyn systems::Harness, plan: &Plan) -> Result<plan::Outcome, Failure> {
    let out = h.pingpong(plan)?;
    if out.received != plan.expected() {
        return Err(Failure::Run(format!(
            "actors counted {} received messages, expected {}",
            out.received,
            plan.expected()
        )));
    }
    Ok(out)
}
