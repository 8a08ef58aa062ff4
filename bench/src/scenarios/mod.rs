//! The scenario registry, and what every scenario runs with ([`Ctx`]): the
//! command line, the peers to compare with and how to run them. To add a
//! scenario, write a module exposing a [`Scenario`] constant whose `run`
//! returns a [`Report`] of the scenario's row type, and list it in [`ALL`];
//! the CLI, `--json` and `--chart` then work for it. volley's side of a
//! scenario is measured through [`crate::measure::Workload`].

pub mod ask_floor;
pub mod ask_local;
pub mod cluster;
pub mod cluster_sim;
pub mod failover;
pub mod grpc;
pub mod kontraktor;
pub mod local_pingpong;
pub mod raw_tcp;
pub mod remote_ask;
pub mod remote_common;
pub mod remote_direct;
pub mod remote_latency;
pub mod remote_pingpong;
pub mod remote_tell;
pub mod remote_tls;
pub mod router;
pub mod sharding;
pub mod spawn;
pub mod web;

use std::path::PathBuf;

use serde::de::DeserializeOwned;

use crate::cli::{Cli, PeerSelection};
use crate::measure::median_by;
use crate::peers::{self, Peer};
use crate::progress::Progress;
use crate::report::{Reported, Results, Row};

/// A benchmark scenario.
pub struct Scenario {
    /// Command-line name, also the JSON `scenario`.
    pub name: &'static str,
    /// One line for `--help`-style listings.
    pub about: &'static str,
    /// Runs volley and the selected peers; the report knows its chart.
    pub run: fn(&Ctx) -> crate::Result<Box<dyn Results>>,
}

/// The peers to run, each ready or with the reason it is skipped.
pub type PeerStatus = Vec<(Peer, Result<(), String>)>;

/// One row per peer that is not ready (with the reason) and what
/// `run_ready` returns for each ready one, in peer order.
pub fn peer_rows<M>(
    peers: PeerStatus,
    mut run_ready: impl FnMut(Peer) -> Vec<Row<M>>,
) -> Vec<Row<M>> {
    let mut rows = Vec::new();
    for (peer, status) in peers {
        match status {
            Err(why) => rows.push(Row::skipped(peer.name(), &why)),
            Ok(()) => rows.extend(run_ready(peer)),
        }
    }
    rows
}

/// How many of the peers are ready to run.
pub fn ready(peers: &PeerStatus) -> usize {
    peers.iter().filter(|(_, status)| status.is_ok()).count()
}

/// Every scenario, in listing order.
pub const ALL: &[Scenario] = &[
    local_pingpong::SCENARIO,
    spawn::SCENARIO,
    ask_local::SCENARIO,
    remote_pingpong::SCENARIO,
    remote_tell::SCENARIO,
    remote_ask::SCENARIO,
    remote_latency::SCENARIO,
    raw_tcp::SCENARIO,
    router::SCENARIO,
    failover::SCENARIO,
    cluster::SCENARIO,
    cluster_sim::SCENARIO,
    grpc::SCENARIO,
    web::SCENARIO,
    kontraktor::SCENARIO,
    sharding::SCENARIO,
];

/// The scenario names.
#[cfg(test)]
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|s| s.name).collect()
}

/// The scenarios as possible values, with their one-line descriptions.
pub fn possible_values() -> Vec<clap::builder::PossibleValue> {
    ALL.iter()
        .map(|s| clap::builder::PossibleValue::new(s.name).help(s.about))
        .collect()
}

/// The scenario called `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    ALL.iter().find(|s| s.name == name)
}

/// What a scenario runs with.
pub struct Ctx {
    pub cli: Cli,
    pub root: PathBuf,
    /// A current-thread runtime on the main thread, for awaiting asks and
    /// `terminate` from the driver.
    pub rt: tokio::runtime::Runtime,
}

impl Ctx {
    pub fn new(cli: Cli) -> Self {
        Ctx {
            cli,
            root: peers::repo_root(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime"),
        }
    }

    /// The peers to run, each ready or with the reason it is skipped.
    /// Default selection: the peers whose harness is already built.
    pub fn peers(&self, progress: &Progress) -> PeerStatus {
        let wanted: Vec<Peer> = match &self.cli.peers {
            None => {
                let (ready, missing): (Vec<Peer>, Vec<Peer>) = Peer::ALL
                    .into_iter()
                    .partition(|p| p.harness().is_ready(&self.root));
                if !missing.is_empty() {
                    progress.note(&format!(
                        "not running {} (harness not built, or java missing; --peers all builds what it can)",
                        missing
                            .iter()
                            .map(|p| p.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                return ready.into_iter().map(|p| (p, Ok(()))).collect();
            }
            Some(PeerSelection::None) => Vec::new(),
            Some(PeerSelection::All) => Peer::ALL.to_vec(),
            Some(PeerSelection::List(list)) => list.clone(),
        };
        let mut harness_status = std::collections::HashMap::new();
        wanted
            .into_iter()
            .map(|p| {
                let status = harness_status
                    .entry(p.harness())
                    .or_insert_with(|| p.harness().ensure(&self.root, !self.cli.no_build, progress))
                    .clone();
                if let Err(why) = &status {
                    progress.note(&format!("skipping {}: {why}", p.name()));
                }
                (p, status)
            })
            .collect()
    }

    /// For a scenario that only Pekko can compare (failover, cluster):
    /// `None` when `--peers` leaves Pekko out, else `Some(build)`. As in
    /// the other scenarios, Pekko runs by default when its harness is
    /// built, and is built first (`build`) when named.
    pub fn pekko_only(&self) -> Option<bool> {
        match &self.cli.peers {
            None => Some(false),
            Some(PeerSelection::None) => None,
            Some(PeerSelection::All) => Some(!self.cli.no_build),
            Some(PeerSelection::List(l)) => l.contains(&Peer::Pekko).then_some(!self.cli.no_build),
        }
    }

    /// Runs `peer`'s harness `runs` times with the same arguments and
    /// returns, per output line, the run with the median `figure`. A failure
    /// becomes a skipped row (the reason also goes to stderr).
    pub fn run_peer<M: DeserializeOwned>(
        &self,
        progress: &Progress,
        peer: Peer,
        scenario: &str,
        args: &[String],
        figure: fn(&M) -> f64,
    ) -> Vec<Row<M>> {
        let mut runs: Vec<Vec<Reported<M>>> = Vec::new();
        for i in 0..self.cli.runs() {
            progress.start(&format!(
                "{} {scenario} {} (run {}/{})",
                peer.name(),
                args.join(" "),
                i + 1,
                self.cli.runs()
            ));
            let result = peers::run(&self.root, peer, scenario, args);
            progress.done();
            match result {
                Ok(rows) => runs.push(rows),
                Err(why) => {
                    progress.note(&format!("{}: {why}", peer.name()));
                    return vec![Row::skipped(peer.name(), &format!("failed: {why}"))];
                }
            }
        }
        let lines = runs.iter().map(Vec::len).min().unwrap_or(0);
        let mut by_line: Vec<Vec<Reported<M>>> = (0..lines).map(|_| Vec::new()).collect();
        for run in runs {
            for (line, m) in by_line.iter_mut().zip(run) {
                line.push(m);
            }
        }
        by_line
            .into_iter()
            .filter_map(|same| median_by(same, |r| figure(&r.metrics)))
            .map(|r| Row::reported(peer.name(), r))
            .collect()
    }

    /// [`run_peer`](Self::run_peer) for every ready peer, one call each,
    /// with a skipped row for the others.
    pub fn run_peers<M: DeserializeOwned>(
        &self,
        progress: &Progress,
        peers: PeerStatus,
        scenario: &str,
        args: &[String],
        figure: fn(&M) -> f64,
    ) -> Vec<Row<M>> {
        peer_rows(peers, |peer| {
            self.run_peer(progress, peer, scenario, args, figure)
        })
    }
}
