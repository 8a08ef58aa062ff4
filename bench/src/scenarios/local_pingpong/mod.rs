//! `local-pingpong`: Akka's TellThroughputPerformanceSpec re-done. P pairs of
//! actors bounce a `u64` on one shared dispatcher with K balls in flight per
//! pair; sweeps the dispatcher `throughput` (at P=4) and the pair count (at
//! the best throughput), plus P=1,K=1 (pure hand-off latency).

mod actors;
mod app_runtime;
mod recorder;
mod spans;
mod stash;

use spans::Extras;
mod summary;

use volley::{ActorSystem, DispatcherSettings, Settings};

use super::{peer_rows, Ctx, Scenario};
use crate::measure::{Calibration, Throughput, Workload};
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::rows::LocalPingPongRow;
use crate::report::{Report, Row};
pub use actors::pingpong_once;

pub const SCENARIO: Scenario = Scenario {
    name: "local-pingpong",
    about: "pairs of actors ping-ponging on one dispatcher, msgs/s",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

const FULL_THROUGHPUTS: &[usize] = &[1, 5, 20, 50, 100, 200];
const FULL_PAIRS: &[usize] = &[1, 2, 4, 8, 16, 32];
const QUICK_THROUGHPUTS: &[usize] = &[1, 50, 200];
const QUICK_PAIRS: &[usize] = &[1, 4, 16];
/// Pairs in the throughput sweep (the reference point P=4,K=100).
pub const SWEEP_PAIRS: u64 = 4;
const DEFAULT_INFLIGHT: usize = 100;

/// What to run, from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub throughputs: Vec<usize>,
    pub pairs: Vec<usize>,
    pub inflight: usize,
    pub messages: Option<u64>,
    pub quick: bool,
    pub runs: usize,
}

impl Plan {
    pub fn from_cli(cli: &crate::cli::Cli) -> crate::Result<Self> {
        let throughputs = cli.throughputs.clone().unwrap_or_else(|| {
            (if cli.quick {
                QUICK_THROUGHPUTS
            } else {
                FULL_THROUGHPUTS
            })
            .to_vec()
        });
        let pairs = cli
            .pairs
            .clone()
            .unwrap_or_else(|| (if cli.quick { QUICK_PAIRS } else { FULL_PAIRS }).to_vec());
        let inflight = cli.inflight.unwrap_or(DEFAULT_INFLIGHT);
        if throughputs.is_empty() || throughputs.contains(&0) {
            return Err("--throughputs needs values of at least 1".into());
        }
        if pairs.is_empty() || pairs.contains(&0) || inflight == 0 {
            return Err("--pairs and --inflight need values of at least 1".into());
        }
        Ok(Plan {
            throughputs,
            pairs,
            inflight,
            messages: cli.messages,
            quick: cli.quick,
            runs: cli.runs(),
        })
    }

    /// Messages per config for a peer harness (fixed per system: the
    /// harness takes one `--messages` for all configs of a call), so that a
    /// config takes about a second in full mode. `latency` is the K=1 call.
    fn peer_messages(&self, peer: Peer, latency: bool, pairs: &[usize]) -> u64 {
        let base: u64 = self.messages.unwrap_or_else(|| {
            let full = match peer {
                Peer::Tokio | Peer::Actix => 40_000_000,
                Peer::Pekko => 20_000_000,
                Peer::Ractor | Peer::Kameo => 6_000_000,
            };
            let m = if latency { full / 8 } else { full };
            if self.quick {
                m / 4
            } else {
                m
            }
        });
        round_to_pairs(base, pairs)
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    a / gcd(a, b) * b
}

/// `m` rounded down to a multiple of 2P for every P (at least one ball per
/// ping).
pub fn round_to_pairs(m: u64, pairs: &[usize]) -> u64 {
    let step = pairs.iter().fold(2u64, |acc, &p| lcm(acc, 2 * p as u64));
    (m / step).max(1) * step
}

fn run(ctx: &Ctx) -> crate::Result<Report<LocalPingPongRow>> {
    let plan = Plan::from_cli(&ctx.cli)?;
    let progress = Progress::new(0);
    let peers = ctx.peers(&progress);
    let volley_configs = plan.throughputs.len() + plan.pairs.len() + 1;
    let wants = |note: &str| {
        ctx.cli
            .cases
            .as_ref()
            .is_none_or(|cases| cases.iter().any(|c| c == note))
    };
    let extra_configs = usize::from(wants("metrics")) * 2 * recorder::ROUNDS
        + usize::from(wants("spans")) * 2 * spans::ROUNDS
        + usize::from(wants("app-runtime")) * app_runtime::CONFIGS;
    progress.add_steps((volley_configs + extra_configs) as u64);
    for (peer, status) in &peers {
        if status.is_ok() {
            let calls = if peer.has_throughput() { 3 } else { 2 };
            progress.add_steps((calls * plan.runs) as u64);
        }
    }
    let mut report = Report::new(SCENARIO.name, crate::chart::local_pingpong);
    report.rows.extend(run_volley(ctx, &plan, &progress)?);
    let recorder = match wants("metrics") {
        true => recorder::note(ctx, &plan, &progress, &report.rows)?,
        false => None,
    };
    let spans = match wants("spans") {
        true => spans::note(ctx, &plan, &progress, &report.rows)?,
        false => None,
    };
    let app_runtime = match wants("app-runtime") {
        true => app_runtime::notes(ctx, &plan, &progress, &report.rows)?,
        false => Vec::new(),
    };
    report.rows.extend(peer_rows(peers, |peer| {
        run_peer(ctx, &plan, &progress, peer)
    }));
    let stash_rounds = if ctx.cli.quick { 50 } else { 300 };
    let stash = match wants("stash") {
        true => Some(stash::note(stash_rounds)?),
        false => None,
    };
    progress.finish();
    report.notes = summary::summary(&report.rows);
    report.notes.extend(stash);
    report.notes.extend(recorder);
    report.notes.extend(spans);
    report.notes.extend(app_runtime);
    Ok(report)
}

/// The row with the best msgs/s among `rows` (the last of equals).
pub(super) fn best<'a, I>(rows: I) -> Option<I::Item>
where
    I: IntoIterator<Item = (&'a str, &'a LocalPingPongRow)>,
{
    rows.into_iter()
        .max_by(|a, b| a.1.msgs_per_sec.total_cmp(&b.1.msgs_per_sec))
}

/// The throughput of the best run at P=4 and `inflight` (`None` for
/// systems without that knob).
pub fn best_throughput<'a>(
    rows: impl IntoIterator<Item = &'a LocalPingPongRow>,
    inflight: u64,
) -> Option<u64> {
    best(
        rows.into_iter()
            .filter(|r| r.pairs == SWEEP_PAIRS && r.inflight == inflight)
            .map(|r| ("", r)),
    )
    .and_then(|(_, r)| r.throughput)
}

/// The configs in run order: the throughput sweep, then the pair sweep at
/// the best throughput, then P=1,K=1, without repeats.
fn push_config(configs: &mut Vec<(usize, usize, usize)>, c: (usize, usize, usize)) {
    if !configs.contains(&c) {
        configs.push(c);
    }
}

fn run_volley(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
) -> crate::Result<Vec<Row<LocalPingPongRow>>> {
    let k = plan.inflight;
    let mut rows = Vec::new();
    let mut done = Vec::new();
    for &t in &plan.throughputs {
        push_config(&mut done, (SWEEP_PAIRS as usize, k, t));
        rows.push(volley_config(
            ctx,
            plan,
            progress,
            SWEEP_PAIRS as usize,
            k,
            t,
        )?);
    }
    let best_t = best_throughput(&rows, k as u64).map_or(plan.throughputs[0], |t| t as usize);
    let mut rest = Vec::new();
    for &p in &plan.pairs {
        push_config(&mut rest, (p, k, best_t));
    }
    push_config(&mut rest, (1, 1, best_t));
    for (p, k, t) in rest {
        if done.contains(&(p, k, t)) {
            progress.done();
            continue;
        }
        done.push((p, k, t));
        rows.push(volley_config(ctx, plan, progress, p, k, t)?);
    }
    Ok(rows
        .into_iter()
        .map(|r| Row::measured("volley", r))
        .collect())
}

/// One (P, K, T) config on its own actor system (T is a dispatcher
/// setting).
struct PingPongConfig {
    system: ActorSystem,
    pairs: usize,
    inflight: usize,
    throughput: usize,
}

impl Workload for PingPongConfig {
    type Run = Throughput;
    type Row = LocalPingPongRow;

    fn run(&mut self, messages: u64) -> crate::Result<Throughput> {
        pingpong_once(&self.system, self.pairs, self.inflight, messages)
    }

    fn row(&self, _messages: u64, run: Throughput) -> LocalPingPongRow {
        LocalPingPongRow {
            pairs: self.pairs as u64,
            inflight: self.inflight as u64,
            throughput: Some(self.throughput as u64),
            messages: run.count,
            elapsed_ns: run.elapsed_ns(),
            msgs_per_sec: run.per_sec(),
        }
    }

    fn figure(row: &LocalPingPongRow) -> f64 {
        row.msgs_per_sec
    }
}

/// One config on a fresh actor system: a warmup that also sizes the run
/// (unless `--messages` fixes it), then `runs` measured runs; the median
/// row.
fn volley_config(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    p: usize,
    k: usize,
    t: usize,
) -> crate::Result<LocalPingPongRow> {
    volley_config_with(ctx, plan, progress, (p, k, t), Extras::NONE)
}

/// [`volley_config`], with the system's `[metrics]` and message spans
/// on or off.
fn volley_config_with(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    (p, k, t): (usize, usize, usize),
    extras: Extras,
) -> crate::Result<LocalPingPongRow> {
    progress.start(&format!(
        "volley P={p} K={k} T={t}{}{}{}",
        if extras.metrics { " (metrics on)" } else { "" },
        if extras.spans { " (spans on)" } else { "" },
        if extras.app_runtime {
            " (app-runtime)"
        } else {
            ""
        }
    ));
    let kind = match extras.app_runtime {
        true => volley::DispatcherKind::AppRuntime,
        false => volley::DispatcherKind::WorkStealing,
    };
    let settings = Settings {
        default_dispatcher: DispatcherSettings {
            throughput: t,
            threads: 0,
            kind,
            ..Default::default()
        },
        metrics: volley::MetricsSettings {
            enabled: extras.metrics,
            ..Default::default()
        },
        tracing: volley::TracingSettings {
            message_spans: extras.spans,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut config = PingPongConfig {
        system: ActorSystem::with_settings("pingpong", settings)?,
        pairs: p,
        inflight: k,
        throughput: t,
    };
    let row = (|| {
        let messages = match plan.messages {
            Some(m) => {
                config.run((m / 10).max(2 * p as u64))?;
                m
            }
            None => {
                let warm =
                    if k == 1 { 200_000 } else { 2_000_000 } / if plan.quick { 4 } else { 1 };
                let calibration = Calibration {
                    seconds: if plan.quick { 0.25 } else { 1.0 },
                    min: 100_000.0,
                    max: 500_000_000.0,
                };
                config.calibrate(warm, &calibration)?
            }
        };
        config.measure(round_to_pairs(messages, &[p]), plan.runs)
    })();
    ctx.rt.block_on(config.system.terminate());
    progress.done();
    row
}

fn configs_arg(configs: &[(usize, usize, Option<usize>)]) -> String {
    configs
        .iter()
        .map(|(p, k, t)| match t {
            Some(t) => format!("{p}:{k}:{t}"),
            None => format!("{p}:{k}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn harness_args(plan: &Plan, peer: Peer, configs: &[(usize, usize, Option<usize>)]) -> Vec<String> {
    let pairs: Vec<usize> = configs.iter().map(|c| c.0).collect();
    let latency = configs.iter().all(|c| c.1 == 1);
    vec![
        "--configs".into(),
        configs_arg(configs),
        "--messages".into(),
        plan.peer_messages(peer, latency, &pairs).to_string(),
        "--warmup".into(),
    ]
}

fn run_peer(ctx: &Ctx, plan: &Plan, progress: &Progress, peer: Peer) -> Vec<Row<LocalPingPongRow>> {
    let k = plan.inflight;
    let call = |configs: &[(usize, usize, Option<usize>)]| {
        let args = harness_args(plan, peer, configs);
        ctx.run_peer(
            progress,
            peer,
            SCENARIO.name,
            &args,
            |r: &LocalPingPongRow| r.msgs_per_sec,
        )
    };
    let skip_call = || (0..plan.runs).for_each(|_| progress.done());
    let mut rows = Vec::new();
    // Pekko sweeps its dispatcher throughput at P=4 and goes on at its best;
    // the Rust frameworks have no such knob and run each pair count once.
    let best_t = if peer.has_throughput() {
        let sweep: Vec<_> = plan
            .throughputs
            .iter()
            .map(|&t| (SWEEP_PAIRS as usize, k, Some(t)))
            .collect();
        rows.extend(call(&sweep));
        let best = best_throughput(rows.iter().filter_map(Row::metrics), k as u64);
        Some(best.map_or(plan.throughputs[0], |t| t as usize))
    } else {
        None
    };
    let mut pair_configs = Vec::new();
    if best_t.is_none() {
        pair_configs.push((SWEEP_PAIRS as usize, k, None));
    }
    for &p in &plan.pairs {
        let c = (p, k, best_t);
        let covered = best_t.is_some() && p as u64 == SWEEP_PAIRS;
        if !covered && !pair_configs.contains(&c) {
            pair_configs.push(c);
        }
    }
    if pair_configs.is_empty() {
        skip_call();
    } else {
        rows.extend(call(&pair_configs));
    }
    let latency = (1, 1, best_t);
    let have_latency =
        pair_configs.contains(&latency) || (best_t.is_some() && SWEEP_PAIRS == 1 && k == 1);
    if have_latency {
        skip_call();
    } else {
        rows.extend(call(&[latency]));
    }
    if let Some(failed) = rows.iter().find(|r| r.is_skipped()) {
        // A failed call: one row with the reason.
        return vec![failed.clone()];
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::tests::pingpong;
    use clap::Parser;

    #[test]
    fn plan_defaults_and_overrides() {
        let cli = crate::cli::Cli::parse_from(["volley-bench", "local-pingpong", "--quick"]);
        let plan = Plan::from_cli(&cli).unwrap();
        assert_eq!(plan.throughputs, QUICK_THROUGHPUTS);
        assert_eq!(plan.pairs, QUICK_PAIRS);
        assert_eq!((plan.inflight, plan.runs), (100, 1));
        let cli = crate::cli::Cli::parse_from([
            "volley-bench",
            "local-pingpong",
            "--throughputs",
            "7",
            "--pairs",
            "3",
            "--inflight",
            "9",
            "--messages",
            "1000",
        ]);
        let plan = Plan::from_cli(&cli).unwrap();
        assert_eq!(
            (plan.throughputs.clone(), plan.pairs.clone(), plan.inflight),
            (vec![7], vec![3], 9)
        );
        assert_eq!(plan.peer_messages(Peer::Tokio, false, &[3]), 996);
        let cli = crate::cli::Cli::parse_from(["volley-bench", "local-pingpong", "--pairs", "0"]);
        assert!(Plan::from_cli(&cli).is_err());
    }

    #[test]
    fn messages_divide_by_every_pair_count() {
        let m = round_to_pairs(40_000_000, FULL_PAIRS);
        assert!(m <= 40_000_000 && m > 39_000_000);
        for p in FULL_PAIRS {
            assert_eq!(m % (2 * *p as u64), 0);
        }
        assert_eq!(round_to_pairs(1, &[4]), 8);
        assert_eq!(
            configs_arg(&[(4, 100, Some(5)), (1, 1, None)]),
            "4:100:5,1:1"
        );
    }

    #[test]
    fn the_best_throughput_is_taken_at_the_sweep_pairs() {
        let rows = [
            pingpong(4, 100, Some(1), 5e6),
            pingpong(4, 100, Some(50), 9e6),
            pingpong(2, 100, Some(200), 99e6),
            pingpong(4, 1, Some(5), 99e6),
        ];
        assert_eq!(best_throughput(&rows, 100), Some(50));
        assert_eq!(best_throughput(&rows[..0], 100), None);
    }
}
