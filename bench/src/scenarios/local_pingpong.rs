//! `local-pingpong`: Akka's TellThroughputPerformanceSpec re-done. P pairs of
//! actors bounce a `u64` on one shared dispatcher with K balls in flight per
//! pair; sweeps the dispatcher `throughput` (at P=4) and the pair count (at
//! the best throughput), plus P=1,K=1 (pure hand-off latency).

use std::path::Path;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::json;
use volley::{
    Actor, ActorRef, ActorSystem, Context, DispatcherSettings, HandleResult, Props, Settings,
};

use super::{Ctx, Scenario};
use crate::chart::{self, LinePanel, Series};
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::{col, num, row, skipped, Fmt, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "local-pingpong",
    about: "pairs of actors ping-ponging on one dispatcher, msgs/s",
    run,
    chart: draw,
};

const FULL_THROUGHPUTS: &[usize] = &[1, 5, 20, 50, 100, 200];
const FULL_PAIRS: &[usize] = &[1, 2, 4, 8, 16, 32];
const QUICK_THROUGHPUTS: &[usize] = &[1, 50, 200];
const QUICK_PAIRS: &[usize] = &[1, 4, 16];
/// Pairs in the throughput sweep (the reference point P=4,K=100).
const SWEEP_PAIRS: usize = 4;
const DEFAULT_INFLIGHT: usize = 100;
/// The ball that starts a ping (never a real ball number).
const START: u64 = u64::MAX;

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

fn columns() -> Vec<crate::report::Column> {
    vec![
        col("pairs", "P", Fmt::Plain),
        col("inflight", "K", Fmt::Plain),
        col("throughput", "T", Fmt::Plain),
        col("messages", "messages", Fmt::Plain),
        col("elapsed_ns", "ms", Fmt::Millis),
        col("msgs_per_sec", "M msgs/s", Fmt::Millions),
    ]
}

fn run(ctx: &Ctx) -> crate::Result<Report> {
    let plan = Plan::from_cli(&ctx.cli)?;
    let progress = Progress::new(0);
    let peers = ctx.peers(&progress);
    let volley_configs = plan.throughputs.len() + plan.pairs.len() + 1;
    progress.add_steps(volley_configs as u64);
    for (peer, status) in &peers {
        if status.is_ok() {
            let calls = if peer.has_throughput() { 3 } else { 2 };
            progress.add_steps((calls * plan.runs) as u64);
        }
    }
    let mut report = Report::new(SCENARIO.name, columns());
    report.rows.extend(run_volley(ctx, &plan, &progress)?);
    for (peer, status) in peers {
        match status {
            Err(why) => report.rows.push(skipped(peer.name(), &why)),
            Ok(()) => report.rows.extend(run_peer(ctx, &plan, &progress, peer)),
        }
    }
    progress.finish();
    report.notes = summary(&report.rows);
    Ok(report)
}

/// Best `msgs_per_sec` row among `rows` matching `filter`.
fn best(rows: &[Row], filter: impl Fn(&Row) -> bool) -> Option<&Row> {
    rows.iter()
        .filter(|r| filter(r) && num(r, "msgs_per_sec").is_some())
        .max_by(|a, b| {
            num(a, "msgs_per_sec")
                .unwrap()
                .total_cmp(&num(b, "msgs_per_sec").unwrap())
        })
}

fn best_throughput(rows: &[Row], inflight: usize) -> Option<usize> {
    best(rows, |r| {
        num(r, "pairs") == Some(SWEEP_PAIRS as f64) && num(r, "inflight") == Some(inflight as f64)
    })
    .and_then(|r| num(r, "throughput"))
    .map(|t| t as usize)
}

/// The configs in run order: the throughput sweep, then the pair sweep at
/// the best throughput, then P=1,K=1, without repeats.
fn push_config(configs: &mut Vec<(usize, usize, usize)>, c: (usize, usize, usize)) {
    if !configs.contains(&c) {
        configs.push(c);
    }
}

fn run_volley(ctx: &Ctx, plan: &Plan, progress: &Progress) -> crate::Result<Vec<Row>> {
    let k = plan.inflight;
    let mut rows = Vec::new();
    let mut done = Vec::new();
    for &t in &plan.throughputs {
        push_config(&mut done, (SWEEP_PAIRS, k, t));
        rows.push(volley_config(ctx, plan, progress, SWEEP_PAIRS, k, t)?);
    }
    let best_t = best_throughput(&rows, k).unwrap_or(plan.throughputs[0]);
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
    Ok(rows)
}

/// One config on a fresh actor system: a warmup that also sizes the run,
/// then `runs` measured runs; the median row.
fn volley_config(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    p: usize,
    k: usize,
    t: usize,
) -> crate::Result<Row> {
    progress.start(&format!("volley P={p} K={k} T={t}"));
    let settings = Settings {
        default_dispatcher: DispatcherSettings {
            throughput: t,
            threads: 0,
            ..Default::default()
        },
        ..Default::default()
    };
    let system = ActorSystem::with_settings("pingpong", settings)?;
    let target = Duration::from_millis(if plan.quick { 250 } else { 1000 });
    let messages = match plan.messages {
        Some(m) => {
            pingpong_once(&system, p, k, (m / 10).max(2 * p as u64))?;
            m
        }
        None => {
            let warm = if k == 1 { 200_000 } else { 2_000_000 } / if plan.quick { 4 } else { 1 };
            let (m, elapsed) = pingpong_once(&system, p, k, warm)?;
            let rate = m as f64 / elapsed.as_secs_f64().max(1e-9);
            (rate * target.as_secs_f64()).clamp(100_000.0, 500_000_000.0) as u64
        }
    };
    let messages = round_to_pairs(messages, &[p]);
    let mut results = Vec::new();
    for _ in 0..plan.runs {
        results.push(pingpong_once(&system, p, k, messages)?);
    }
    ctx.rt.block_on(system.terminate());
    progress.done();
    let mut rows: Vec<Row> = results
        .into_iter()
        .map(|(m, elapsed)| {
            row(
                "volley",
                json!({
                    "pairs": p, "inflight": k, "throughput": t, "messages": m,
                    "elapsed_ns": elapsed.as_nanos() as u64,
                    "msgs_per_sec": m as f64 / elapsed.as_secs_f64(),
                }),
            )
        })
        .collect();
    let median = crate::measure::median_row(&rows, "msgs_per_sec");
    Ok(median.unwrap_or_else(|| rows.remove(0)))
}

enum Event {
    Ready,
    Done(u64),
    Stopped(u64),
}

struct Ping {
    balls: u64,
    inflight: u64,
    sent: u64,
    received: u64,
    pong: Option<ActorRef<u64>>,
    events: Sender<Event>,
}

impl Actor for Ping {
    type Msg = u64;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let ping = ctx.myself();
        let events = self.events.clone();
        self.pong = Some(ctx.spawn_anonymous(Props::new(move || Pong {
            ping: ping.clone(),
            count: 0,
            events: events.clone(),
        }))?);
        let _ = self.events.send(Event::Ready);
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, ball: u64) -> HandleResult {
        let pong = self.pong.as_ref().expect("spawned in pre_start");
        if ball == START {
            let first = self.inflight.min(self.balls);
            for i in 0..first {
                pong.tell(i);
            }
            self.sent = first;
            if self.balls == 0 {
                let _ = self.events.send(Event::Done(0));
            }
            return Ok(());
        }
        self.received += 1;
        if self.sent < self.balls {
            pong.tell(self.sent);
            self.sent += 1;
        }
        if self.received == self.balls {
            let _ = self.events.send(Event::Done(self.received));
        }
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let _ = self.events.send(Event::Stopped(self.received));
    }
}

struct Pong {
    ping: ActorRef<u64>,
    count: u64,
    events: Sender<Event>,
}

impl Actor for Pong {
    type Msg = u64;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        let _ = self.events.send(Event::Ready);
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, ball: u64) -> HandleResult {
        self.count += 1;
        self.ping.tell(ball);
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let _ = self.events.send(Event::Stopped(self.count));
    }
}

fn recv(rx: &Receiver<Event>, deadline: Instant, what: &str) -> crate::Result<Event> {
    let left = deadline.saturating_duration_since(Instant::now());
    rx.recv_timeout(left).map_err(|e| match e {
        RecvTimeoutError::Timeout => format!("timed out waiting for {what}").into(),
        RecvTimeoutError::Disconnected => format!("actors gone while waiting for {what}").into(),
    })
}

/// One measured run: P fresh pairs, M messages in total (rounded down to a
/// multiple of 2P). Every message is counted by the actor receiving it and
/// the total is checked. Returns (messages, elapsed from the first Start to
/// the last pair's report).
pub fn pingpong_once(
    system: &ActorSystem,
    p: usize,
    k: usize,
    messages: u64,
) -> crate::Result<(u64, Duration)> {
    let balls = messages / p as u64 / 2;
    let expected = 2 * p as u64 * balls;
    let dead_before = system.dead_letter_count();
    let (tx, rx) = channel();
    let mut pings = Vec::with_capacity(p);
    for _ in 0..p {
        let events = tx.clone();
        pings.push(system.spawn_anonymous(Props::new(move || Ping {
            balls,
            inflight: k as u64,
            sent: 0,
            received: 0,
            pong: None,
            events: events.clone(),
        }))?);
    }
    drop(tx);
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..2 * p {
        match recv(&rx, deadline, "the pairs to start")? {
            Event::Ready => {}
            _ => return Err("an actor reported before Start".into()),
        }
    }
    let start = Instant::now();
    for ping in &pings {
        ping.tell(START);
    }
    let deadline = start + Duration::from_secs(300);
    let mut received = 0;
    for i in 0..p {
        match recv(&rx, deadline, &format!("pair reports ({i} of {p} in)"))? {
            Event::Done(n) => received += n,
            _ => return Err("unexpected event during the run".into()),
        }
    }
    let elapsed = start.elapsed();
    for ping in &pings {
        system.stop(ping);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut counted = 0;
    for _ in 0..2 * p {
        match recv(&rx, deadline, "the pairs to stop")? {
            Event::Stopped(n) => counted += n,
            _ => return Err("unexpected event while stopping".into()),
        }
    }
    let dead = system.dead_letter_count() - dead_before;
    if received != p as u64 * balls || counted != expected || dead != 0 {
        return Err(format!(
            "message count mismatch at P={p} K={k}: expected {expected} messages \
             ({} replies to pings), actors counted {counted} ({received} replies), \
             {dead} dead letters",
            p as u64 * balls
        )
        .into());
    }
    Ok((expected, elapsed))
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

fn run_peer(ctx: &Ctx, plan: &Plan, progress: &Progress, peer: Peer) -> Vec<Row> {
    let k = plan.inflight;
    let call = |configs: &[(usize, usize, Option<usize>)]| {
        let args = harness_args(plan, peer, configs);
        ctx.run_peer(progress, peer, SCENARIO.name, &args, "msgs_per_sec")
    };
    let skip_call = || (0..plan.runs).for_each(|_| progress.done());
    let mut rows = Vec::new();
    // Pekko sweeps its dispatcher throughput at P=4 and goes on at its best;
    // the Rust frameworks have no such knob and run each pair count once.
    let best_t = if peer.has_throughput() {
        let sweep: Vec<_> = plan
            .throughputs
            .iter()
            .map(|&t| (SWEEP_PAIRS, k, Some(t)))
            .collect();
        rows.extend(call(&sweep));
        Some(best_throughput(&rows, k).unwrap_or(plan.throughputs[0]))
    } else {
        None
    };
    let mut pair_configs = Vec::new();
    if best_t.is_none() {
        pair_configs.push((SWEEP_PAIRS, k, None));
    }
    for &p in &plan.pairs {
        let c = (p, k, best_t);
        let covered = best_t.is_some() && p == SWEEP_PAIRS;
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
    if let Some(failed) = rows.iter().find(|r| r.contains_key("skipped")) {
        // A failed call: one row with the reason.
        return vec![failed.clone()];
    }
    rows
}

fn is_framework(r: &Row) -> bool {
    r.get("system")
        .and_then(|s| s.as_str())
        .and_then(Peer::from_name)
        .is_some_and(Peer::is_framework)
}

fn system_is(r: &Row, name: &str) -> bool {
    r.get("system").and_then(|s| s.as_str()) == Some(name)
}

fn describe(r: &Row) -> String {
    format!(
        "{} {:.1} M msgs/s (P={} K={} T={})",
        r["system"].as_str().unwrap_or("?"),
        num(r, "msgs_per_sec").unwrap_or(0.0) / 1e6,
        r["pairs"],
        r["inflight"],
        match &r["throughput"] {
            serde_json::Value::Null => "-".to_string(),
            t => t.to_string(),
        }
    )
}

/// The comparisons the issue sets targets for.
fn summary(rows: &[Row]) -> Vec<String> {
    let mut notes = vec![String::new()];
    let Some(v) = best(rows, |r| system_is(r, "volley")) else {
        return notes;
    };
    let vb = num(v, "msgs_per_sec").unwrap_or(0.0);
    notes.push(format!(
        "best volley: {} — target ≥ 150 M msgs/s: {}",
        describe(v),
        verdict(vb >= 150e6)
    ));
    if let Some(f) = best(rows, is_framework) {
        let ratio = vb / num(f, "msgs_per_sec").unwrap_or(f64::NAN);
        notes.push(format!(
            "best actor framework: {} — volley/it = {ratio:.2}× (target ≥ 2×: {})",
            describe(f),
            verdict(ratio >= 2.0)
        ));
    }
    if let Some(t) = best(rows, |r| system_is(r, "tokio")) {
        let ratio = vb / num(t, "msgs_per_sec").unwrap_or(f64::NAN);
        notes.push(format!(
            "best tokio-channel baseline: {} — volley/it = {ratio:.2}× (target ≥ 1.5×: {})",
            describe(t),
            verdict(ratio >= 1.5)
        ));
    }
    let latency = |r: &Row| num(r, "pairs") == Some(1.0) && num(r, "inflight") == Some(1.0);
    if let (Some(v1), Some(p1)) = (
        best(rows, |r| system_is(r, "volley") && latency(r)),
        best(rows, |r| !system_is(r, "volley") && latency(r)),
    ) {
        let (a, b) = (
            num(v1, "msgs_per_sec").unwrap_or(0.0),
            num(p1, "msgs_per_sec").unwrap_or(f64::NAN),
        );
        notes.push(format!(
            "P=1,K=1: volley {:.1} M vs best peer {} — {:.2}× (target ≥ 1×: {})",
            a / 1e6,
            describe(p1),
            a / b,
            verdict(a >= b)
        ));
    }
    notes
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// Two panels: msgs/s against throughput (P=4, K) and against pairs (K, at
/// each system's best throughput), one line per system.
fn draw(report: &Report, path: &Path) -> crate::Result<()> {
    let rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| !r.contains_key("skipped"))
        .collect();
    let k = rows
        .iter()
        .filter_map(|r| num(r, "inflight"))
        .fold(1.0, f64::max);
    let mut systems: Vec<String> = Vec::new();
    for r in &rows {
        let s = r["system"].as_str().unwrap_or("?").to_string();
        if !systems.contains(&s) {
            systems.push(s);
        }
    }
    let throughputs: Vec<f64> = {
        let mut t: Vec<f64> = rows.iter().filter_map(|r| num(r, "throughput")).collect();
        t.sort_by(f64::total_cmp);
        t.dedup();
        t
    };
    let mut by_t = Vec::new();
    let mut by_p = Vec::new();
    for s in &systems {
        let mine: Vec<Row> = rows
            .iter()
            .filter(|r| system_is(r, s) && num(r, "inflight") == Some(k))
            .map(|r| (*r).clone())
            .collect();
        let at4 = |r: &Row| num(r, "pairs") == Some(SWEEP_PAIRS as f64);
        let mut t_points: Vec<(f64, f64)> = mine
            .iter()
            .filter(|r| at4(r))
            .filter_map(|r| Some((num(r, "throughput")?, num(r, "msgs_per_sec")? / 1e6)))
            .collect();
        if t_points.is_empty() {
            // No throughput knob: the same value at every throughput.
            if let Some(v) = mine
                .iter()
                .find(|r| at4(r))
                .and_then(|r| num(r, "msgs_per_sec"))
            {
                t_points = throughputs.iter().map(|&t| (t, v / 1e6)).collect();
            }
        }
        t_points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let best_t = best_throughput(&mine, k as usize).map(|t| t as f64);
        let mut p_points: Vec<(f64, f64)> = mine
            .iter()
            .filter(|r| num(r, "throughput") == best_t)
            .filter_map(|r| Some((num(r, "pairs")?, num(r, "msgs_per_sec")? / 1e6)))
            .collect();
        p_points.sort_by(|a, b| a.0.total_cmp(&b.0));
        by_t.push(Series {
            name: s.clone(),
            points: t_points,
        });
        by_p.push(Series {
            name: s.clone(),
            points: p_points,
        });
    }
    chart::lines(
        path,
        &format!(
            "local-pingpong — {} cores, {}",
            report.machine.cores, report.machine.cpu
        ),
        &[
            LinePanel {
                title: format!("P={SWEEP_PAIRS}, K={k}: msgs/s vs dispatcher throughput"),
                x_label: "throughput (messages per activation)".into(),
                y_label: "M msgs/s".into(),
                series: by_t,
            },
            LinePanel {
                title: format!("K={k}, best throughput: msgs/s vs pairs"),
                x_label: "pairs".into(),
                y_label: "M msgs/s".into(),
                series: by_p,
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn a_small_run_counts_every_message() {
        let system = ActorSystem::new("pingpong-test").unwrap();
        let (m, elapsed) = pingpong_once(&system, 2, 10, 4_000).unwrap();
        assert_eq!(m, 4_000);
        assert!(elapsed > Duration::ZERO);
        let (m, _) = pingpong_once(&system, 3, 1, 100).unwrap();
        assert_eq!(m, 96);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(system.terminate());
    }

    #[test]
    fn summary_compares_with_the_targets() {
        let rows = vec![
            row(
                "volley",
                json!({"pairs": 4, "inflight": 100, "throughput": 50, "msgs_per_sec": 160e6}),
            ),
            row(
                "volley",
                json!({"pairs": 1, "inflight": 1, "throughput": 50, "msgs_per_sec": 10e6}),
            ),
            row(
                "actix",
                json!({"pairs": 4, "inflight": 100, "throughput": null, "msgs_per_sec": 60e6}),
            ),
            row(
                "tokio",
                json!({"pairs": 1, "inflight": 1, "throughput": null, "msgs_per_sec": 12e6}),
            ),
            skipped("pekko", "java not found"),
        ];
        let notes = summary(&rows).join("\n");
        assert!(notes.contains("best volley: volley 160.0"), "{notes}");
        assert!(notes.contains("2.67×"), "{notes}");
        assert!(
            notes.contains("P=1,K=1: volley 10.0 M vs best peer tokio 12.0"),
            "{notes}"
        );
        assert!(notes.contains("MISSED"), "{notes}");
    }
}
