//! `volley-bench`: runs one benchmark scenario on volley and on its peers
//! (actix, ractor, kameo, a plain tokio baseline, Apache Pekko) and prints a
//! table, optionally JSON (`--json`) and a chart (`--chart FILE.svg`).
//!
//! Layout: `scenarios/` (one module per scenario, and the registry),
//! `measure` (how volley's side is measured), `report/` (typed result rows,
//! the table and the JSON contract), `chart/` (every chart), `peers` (the
//! peer harnesses, run as child processes).
//!
//! Adding a scenario: write `scenarios/<name>.rs` exposing a
//! [`scenarios::Scenario`] and list it in [`scenarios::ALL`].

mod chart;
mod cli;
mod measure;
mod peers;
mod progress;
mod report;
mod scenarios;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// Errors end the run with a message on stderr and exit code 1.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// A hidden subcommand's entry point: its arguments after the name.
type Serve = fn(&[String]) -> Result<()>;

/// A hidden subcommand's process writes volley's log lines at the level
/// `VOLLEY_BENCH_MEMBER_LOG` names (`info`, `debug`, ...) to its stderr,
/// which the member scenarios keep in their log files. Unset: no
/// subscriber, so the measured paths log nothing.
fn log_if_asked() {
    let Ok(level) = std::env::var("VOLLEY_BENCH_MEMBER_LOG") else {
        return;
    };
    let Ok(level) = level.parse::<tracing::Level>() else {
        eprintln!("VOLLEY_BENCH_MEMBER_LOG={level}: not a level (error, warn, info, debug, trace)");
        return;
    };
    let _already = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    // Hidden subcommands: the other process of a two-process scenario.
    let args: Vec<String> = std::env::args().collect();
    let hidden: [(&str, Serve); 7] = [
        // The server half of `--two-processes` (remote scenarios).
        (
            scenarios::remote_common::SERVER_COMMAND,
            scenarios::remote_common::serve,
        ),
        // The watched node of `failover`.
        (
            scenarios::failover::NODE_COMMAND,
            scenarios::failover::serve,
        ),
        // A volley member of `cluster`.
        (
            scenarios::cluster::volley_member::NODE_COMMAND,
            scenarios::cluster::volley_member::serve,
        ),
        // The servers `grpc` loads.
        (
            scenarios::grpc::servers::SERVER_COMMAND,
            scenarios::grpc::servers::serve,
        ),
        // The servers `web` loads, and their clients.
        (
            scenarios::web::servers::SERVER_COMMAND,
            scenarios::web::servers::serve,
        ),
        (
            scenarios::web::load::LOAD_COMMAND,
            scenarios::web::load::serve,
        ),
        // A volley member of `sharding`.
        (
            scenarios::sharding::volley_member::NODE_COMMAND,
            scenarios::sharding::volley_member::serve,
        ),
    ];
    if let Some((name, serve)) = hidden
        .iter()
        .find(|(name, _)| args.get(1).map(String::as_str) == Some(*name))
    {
        log_if_asked();
        return match serve(&args[2..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("volley-bench {name}: error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = cli::Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("volley-bench {}: error: {e}", cli.scenario);
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &cli::Cli) -> Result<()> {
    let scenario = scenarios::find(&cli.scenario).expect("clap checked the name");
    let ctx = scenarios::Ctx::new(cli.clone());
    let results = (scenario.run)(&ctx)?;
    let table = results.table();
    if cli.json {
        eprintln!("{table}");
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", results.to_json())?;
        out.flush()?;
    } else {
        println!("{table}");
    }
    if let Some(path) = &cli.chart {
        results.write_chart(path)?;
        eprintln!("chart written to {}", path.display());
    }
    Ok(())
}
