//! Command line: one scenario plus options shared by all scenarios.

use std::path::PathBuf;

use clap::Parser;

use crate::peers::Peer;
use crate::scenarios;

/// volley's benchmark driver: runs volley and its peers on the same workload.
#[derive(Parser, Debug, Clone)]
#[command(name = "volley-bench", version, about, long_about = None)]
pub struct Cli {
    /// Scenario to run.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(scenarios::possible_values()))]
    pub scenario: String,

    /// Print exactly one JSON object on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,

    /// Reduced sweep and message counts: the whole scenario, peers included,
    /// finishes in under 60 s (not counting building the peers).
    #[arg(long)]
    pub quick: bool,

    /// Also write a chart (SVG) to this file.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,

    /// Peers to compare with: `all`, `none`, or a list of
    /// actix,ractor,kameo,tokio,pekko. Default: the peers whose harness is
    /// already built. Naming a peer builds its harness if it is missing.
    #[arg(long, value_name = "LIST", value_parser = parse_peers)]
    pub peers: Option<PeerSelection>,

    /// Never build a missing peer harness; skip that peer instead.
    #[arg(long)]
    pub no_build: bool,

    /// local-pingpong: dispatcher throughput values to sweep.
    #[arg(long, value_delimiter = ',', value_name = "T,..")]
    pub throughputs: Option<Vec<usize>>,

    /// local-pingpong: pair counts to sweep.
    #[arg(long, value_delimiter = ',', value_name = "P,..")]
    pub pairs: Option<Vec<usize>>,

    /// local-pingpong: messages in flight per pair in the sweeps (default 100).
    /// kontraktor: the number of one-ask tasks of `ask-tasks` and
    /// `ask-tasks-app` (default 10000).
    #[arg(long, value_name = "K")]
    pub inflight: Option<usize>,

    /// local-pingpong: messages per config for every system (default: sized
    /// per system so that a config runs about a second). kontraktor: tells
    /// per run for every system (default 2000000, quick 300000).
    /// remote-tell: tells per run (default: calibrated); given, the warm-up
    /// is half of it, on the first sender.
    #[arg(long, value_name = "M")]
    pub messages: Option<u64>,

    /// spawn: number of actors (default 100000).
    #[arg(long, value_name = "N")]
    pub actors: Option<u64>,

    /// ask-local: number of measured requests (default 100000, quick 20000).
    /// kontraktor: asks per run for every system (default 1000000, quick
    /// 200000).
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,

    /// remote-*: run the server node in a second OS process (this binary,
    /// re-run as its hidden `remote-server` half) instead of in-process.
    #[arg(long)]
    pub two_processes: bool,

    /// remote-pingpong: run volley with write batching off only (default:
    /// batched, then unbatched, to show the gain).
    #[arg(long)]
    pub no_batching: bool,

    /// remote-pingpong: client counts (default 1,5,10,15,20,25,30; quick 1,10,30).
    #[arg(long, value_delimiter = ',', value_name = "C,..")]
    pub clients: Option<Vec<usize>>,

    /// remote-pingpong: round trips per client (default 100000).
    #[arg(long, value_name = "R")]
    pub repeat: Option<u64>,

    /// remote-*: default-dispatcher threads per actor system (default 2).
    #[arg(long, value_name = "N")]
    pub dispatcher_threads: Option<usize>,

    /// remote-*: tokio I/O threads per actor system (default 1).
    #[arg(long, value_name = "N")]
    pub io_threads: Option<usize>,

    /// remote-*: how long an idle dispatcher thread spins before it parks,
    /// in microseconds (default: volley's default, 300).
    #[arg(long, value_name = "US")]
    pub idle_spin_us: Option<u64>,

    /// failover: the cases to run (default
    /// kill,stall-short,stall-long,restart,large-messages).
    /// local-pingpong: the notes measured after the table (default
    /// stash,metrics,spans,app-runtime; `none` for none, e.g. under
    /// callgrind).
    /// remote-pingpong: `metrics` adds the recorder's note (not by default);
    /// `batched`, `unbatched`, `tls` pick volley's runs (default all three).
    /// remote-tell: the senders, of tell-task,tell-tasks,tell-actor, and
    /// `tls` for the TLS rows (default all).
    /// cluster: the rounds, `membership` (join, receptionist, kill, leave)
    /// and `partition` (default both).
    /// kontraktor: volley's senders, of tell-actor,tell-task,ask-actors,
    /// ask-tasks,ask-tasks-app (default all; `--peers none` leaves
    /// kontraktor out).
    /// spawn: the modes, `children` and `top-level` (default both).
    #[arg(long, value_delimiter = ',', value_name = "CASE,..")]
    pub cases: Option<Vec<String>>,

    /// cluster: cluster sizes, members (one process each) (default 3,5,7;
    /// quick 3).
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub nodes: Option<Vec<usize>>,

    /// failover: remote actors watched (default 10).
    #[arg(long, value_name = "N")]
    pub watched: Option<usize>,

    /// Measured runs per config; the median is reported (default 3, quick 1).
    /// cluster: repetitions per size (fresh clusters).
    #[arg(long, value_name = "R")]
    pub runs: Option<usize>,
}

impl Cli {
    /// Runs per config.
    pub fn runs(&self) -> usize {
        self.runs.unwrap_or(if self.quick { 1 } else { 3 }).max(1)
    }
}

/// Which peers run next to volley.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerSelection {
    /// Every peer; missing harnesses are built.
    All,
    /// volley alone.
    None,
    /// These peers; missing harnesses are built.
    List(Vec<Peer>),
}

/// Parses `all`, `none` or a comma-separated list of peer names.
pub fn parse_peers(s: &str) -> Result<PeerSelection, String> {
    match s.trim() {
        "all" => return Ok(PeerSelection::All),
        "none" | "" => return Ok(PeerSelection::None),
        _ => {}
    }
    let mut peers = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let peer = Peer::from_name(name).ok_or_else(|| {
            format!(
                "unknown peer `{name}` (expected all, none or a list of {})",
                Peer::ALL.map(|p| p.name()).join(",")
            )
        })?;
        if !peers.contains(&peer) {
            peers.push(peer);
        }
    }
    Ok(PeerSelection::List(peers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("volley-bench").chain(args.iter().copied()))
    }

    #[test]
    fn scenario_and_flags() {
        let cli = parse(&[
            "local-pingpong",
            "--json",
            "--quick",
            "--chart",
            "out.svg",
            "--throughputs",
            "1,50,200",
            "--pairs",
            "1,4",
            "--inflight",
            "10",
            "--messages",
            "1000000",
        ])
        .unwrap();
        assert_eq!(cli.scenario, "local-pingpong");
        assert!(cli.json && cli.quick);
        assert_eq!(cli.chart.unwrap().to_str(), Some("out.svg"));
        assert_eq!(cli.throughputs, Some(vec![1, 50, 200]));
        assert_eq!(cli.pairs, Some(vec![1, 4]));
        assert_eq!(cli.inflight, Some(10));
        assert_eq!(cli.messages, Some(1_000_000));
        assert_eq!(cli.peers, None);
        assert_eq!(parse(&["spawn"]).unwrap().runs(), 3);
        assert_eq!(parse(&["spawn", "--quick"]).unwrap().runs(), 1);
    }

    #[test]
    fn remote_flags() {
        let cli = parse(&[
            "remote-pingpong",
            "--two-processes",
            "--no-batching",
            "--clients",
            "1,10",
            "--repeat",
            "500",
            "--dispatcher-threads",
            "1",
            "--io-threads",
            "2",
        ])
        .unwrap();
        assert!(cli.two_processes && cli.no_batching);
        assert_eq!(cli.clients, Some(vec![1, 10]));
        assert_eq!(cli.repeat, Some(500));
        assert_eq!((cli.dispatcher_threads, cli.io_threads), (Some(1), Some(2)));
        let cli = parse(&["failover", "--cases", "kill,restart", "--watched", "3"]).unwrap();
        assert_eq!(
            cli.cases,
            Some(vec!["kill".to_string(), "restart".to_string()])
        );
        assert_eq!(cli.watched, Some(3));
        let cli = parse(&["cluster", "--nodes", "3,5", "--runs", "2"]).unwrap();
        assert_eq!((cli.runs(), cli.nodes), (2, Some(vec![3, 5])));
        let cli = parse(&["remote-tell"]).unwrap();
        assert!(!cli.two_processes && !cli.no_batching && cli.clients.is_none());
        assert!(parse(&["remote-pingpong", "--clients", "x"]).is_err());
    }

    #[test]
    fn peers_lists() {
        let cli = parse(&["spawn", "--peers", "actix,pekko,actix"]).unwrap();
        assert_eq!(
            cli.peers,
            Some(PeerSelection::List(vec![Peer::Actix, Peer::Pekko]))
        );
        assert_eq!(parse_peers("all"), Ok(PeerSelection::All));
        assert_eq!(parse_peers("none"), Ok(PeerSelection::None));
        assert!(parse_peers("akka").unwrap_err().contains("unknown peer"));
    }

    #[test]
    fn bad_arguments_are_rejected() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["nope"]).is_err());
        assert!(parse(&["local-pingpong", "--pairs", "x"]).is_err());
        assert!(parse(&["local-pingpong", "--peers", "akka"]).is_err());
        for s in crate::scenarios::names() {
            assert!(parse(&[s]).is_ok(), "{s}");
        }
    }
}
