//! `spawn`: time and resident memory to spawn and stop N idle actors.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use volley::{Actor, ActorSystem, Context, HandleResult, Props};

use super::{Ctx, Scenario};
use crate::chart::{self, BarPanel};
use crate::measure::{median, vm_rss_bytes, wait_until};
use crate::progress::Progress;
use crate::report::{col, num, row, skipped, Fmt, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "spawn",
    about: "spawn and stop 100,000 idle actors: ns and bytes per actor",
    run,
    chart: draw,
};

const DEFAULT_ACTORS: u64 = 100_000;
const WARMUP_ACTORS: u64 = 10_000;

fn run(ctx: &Ctx) -> crate::Result<Report> {
    let n = ctx.cli.actors.unwrap_or(DEFAULT_ACTORS).max(1);
    let runs = ctx.cli.runs();
    let progress = Progress::new(2);
    let peers = ctx.peers(&progress);
    progress.add_steps((peers.iter().filter(|p| p.1.is_ok()).count() * runs) as u64);
    let mut report = Report::new(
        SCENARIO.name,
        vec![
            col("mode", "volley mode", Fmt::Plain),
            col("actors", "actors", Fmt::Plain),
            col("spawn_ns_per_actor", "spawn µs/actor", Fmt::Micros),
            col("stop_ns_per_actor", "stop µs/actor", Fmt::Micros),
            col("bytes_per_actor", "bytes/actor", Fmt::Round),
        ],
    );
    for mode in [Mode::Children, Mode::TopLevel] {
        progress.start(&format!(
            "volley: spawn/stop {n} actors ({}) × {runs}",
            mode.name()
        ));
        report.rows.push(volley(ctx, n, runs, mode)?);
        progress.done();
    }
    let args = vec!["--actors".to_string(), n.to_string()];
    for (peer, status) in peers {
        match status {
            Err(why) => report.rows.push(skipped(peer.name(), &why)),
            Ok(()) => report.rows.extend(ctx.run_peer(
                &progress,
                peer,
                SCENARIO.name,
                &args,
                "spawn_ns_per_actor",
            )),
        }
    }
    progress.finish();
    report.notes.push(String::new());
    for v in report.rows.iter().filter(|r| r["system"] == "volley") {
        let (s, b) = (
            num(v, "spawn_ns_per_actor").unwrap_or(f64::NAN),
            num(v, "bytes_per_actor").unwrap_or(f64::NAN),
        );
        report.notes.push(format!(
            "volley ({}): spawn {:.3} µs/actor (target ≤ 0.5: {}), {b:.0} B/actor (target ≤ 600: {})",
            v["mode"].as_str().unwrap_or("?"),
            s / 1e3,
            if s <= 500.0 { "met" } else { "MISSED" },
            if b <= 600.0 { "met" } else { "MISSED" },
        ));
    }
    Ok(report)
}

struct Idle {
    started: Arc<AtomicUsize>,
    stopped: Arc<AtomicUsize>,
}

impl Actor for Idle {
    type Msg = ();
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.stopped.fetch_add(1, Ordering::Relaxed);
    }
}

enum ParentMsg {
    Spawn(u64, Props<Idle>),
    StopAll,
}

/// Spawns and stops children on request.
struct Parent;

impl Actor for Parent {
    type Msg = ParentMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: ParentMsg) -> HandleResult {
        match msg {
            ParentMsg::Spawn(n, props) => {
                for _ in 0..n {
                    ctx.spawn_anonymous(props.clone())?;
                }
            }
            ParentMsg::StopAll => ctx.stop_all_children(),
        }
        Ok(())
    }
}

/// How the actors are spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Children of one parent actor, spawned and stopped from its handler.
    Children,
    /// Top-level actors spawned and stopped from the driver thread.
    TopLevel,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Children => "children",
            Mode::TopLevel => "top-level",
        }
    }
}

/// One round: spawn `n` actors (see [`Mode`]), wait until every
/// `pre_start` ran, stop them all, wait until every `post_stop` ran.
/// Returns (spawn ns/actor, stop ns/actor, VmRSS growth bytes/actor).
pub fn round(system: &ActorSystem, n: u64, mode: Mode) -> crate::Result<(f64, f64, f64)> {
    match mode {
        Mode::TopLevel => round_top_level(system, n),
        Mode::Children => round_children(system, n),
    }
}

fn idle_props() -> (Props<Idle>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let stopped = Arc::new(AtomicUsize::new(0));
    let props = {
        let (started, stopped) = (started.clone(), stopped.clone());
        Props::new(move || Idle {
            started: started.clone(),
            stopped: stopped.clone(),
        })
    };
    (props, started, stopped)
}

fn round_children(system: &ActorSystem, n: u64) -> crate::Result<(f64, f64, f64)> {
    let (props, started, stopped) = idle_props();
    let parent = system.spawn_anonymous(Props::new(|| Parent))?;
    let timeout = Duration::from_secs(120);
    let rss0 = vm_rss_bytes().unwrap_or(0);
    let t0 = Instant::now();
    parent.tell(ParentMsg::Spawn(n, props));
    wait_until("every actor to start", timeout, || {
        started.load(Ordering::Relaxed) == n as usize
    })?;
    let spawn = t0.elapsed();
    let rss1 = vm_rss_bytes().unwrap_or(0);
    let t1 = Instant::now();
    parent.tell(ParentMsg::StopAll);
    wait_until("every actor to stop", timeout, || {
        stopped.load(Ordering::Relaxed) == n as usize
    })?;
    let stop = t1.elapsed();
    system.stop(&parent);
    wait_until("the parent to stop", timeout, || parent.is_terminated())?;
    let per = |d: Duration| d.as_nanos() as f64 / n as f64;
    Ok((
        per(spawn),
        per(stop),
        rss1.saturating_sub(rss0) as f64 / n as f64,
    ))
}

/// Top-level variant of [`round`] from this thread, wait until every
/// `pre_start` ran, stop them all, wait until every `post_stop` ran.
/// Returns (spawn ns/actor, stop ns/actor, VmRSS growth bytes/actor).
fn round_top_level(system: &ActorSystem, n: u64) -> crate::Result<(f64, f64, f64)> {
    let (props, started, stopped) = idle_props();
    let mut refs = Vec::with_capacity(n as usize);
    let timeout = Duration::from_secs(120);
    let rss0 = vm_rss_bytes().unwrap_or(0);
    let t0 = Instant::now();
    for _ in 0..n {
        refs.push(system.spawn_anonymous(props.clone())?);
    }
    wait_until("every actor to start", timeout, || {
        started.load(Ordering::Relaxed) == n as usize
    })?;
    let spawn = t0.elapsed();
    let rss1 = vm_rss_bytes().unwrap_or(0);
    let t1 = Instant::now();
    for r in &refs {
        system.stop(r);
    }
    wait_until("every actor to stop", timeout, || {
        stopped.load(Ordering::Relaxed) == n as usize
    })?;
    let stop = t1.elapsed();
    drop(refs);
    let per = |d: Duration| d.as_nanos() as f64 / n as f64;
    Ok((
        per(spawn),
        per(stop),
        rss1.saturating_sub(rss0) as f64 / n as f64,
    ))
}

fn volley(ctx: &Ctx, n: u64, runs: usize, mode: Mode) -> crate::Result<Row> {
    // A fresh system (and so a fresh allocator state as far as possible)
    // per mode.
    let system = ActorSystem::new("spawn")?;
    // Warm the dispatcher up, then measure. Memory is taken from the first
    // measured round: later rounds reuse pages the allocator kept.
    round(&system, WARMUP_ACTORS.min(n), mode)?;
    let mut spawn = Vec::new();
    let mut stop = Vec::new();
    let mut bytes = None;
    for _ in 0..runs {
        let (s, t, b) = round(&system, n, mode)?;
        spawn.push(s);
        stop.push(t);
        bytes.get_or_insert(b);
    }
    ctx.rt.block_on(system.terminate());
    Ok(row(
        "volley",
        json!({
            "mode": mode.name(),
            "actors": n,
            "spawn_ns_per_actor": median(&mut spawn),
            "stop_ns_per_actor": median(&mut stop),
            "bytes_per_actor": bytes.unwrap_or(0.0),
        }),
    ))
}

/// `system`, or `system (mode)` for volley's variants.
pub fn label(r: &Row) -> Option<String> {
    let system = r.get("system")?.as_str()?;
    Some(match r.get("mode").and_then(|m| m.as_str()) {
        Some(mode) => format!("{system} ({mode})"),
        None => system.to_string(),
    })
}

fn draw(report: &Report, path: &Path) -> crate::Result<()> {
    let bars = |key: &str, scale: f64| -> Vec<(String, f64)> {
        report
            .rows
            .iter()
            .filter_map(|r| Some((label(r)?, num(r, key)? / scale)))
            .collect()
    };
    chart::bars(
        path,
        &format!(
            "spawn and stop idle actors — {} cores, {}",
            report.machine.cores, report.machine.cpu
        ),
        &[
            BarPanel {
                title: "spawn (lower is better)".into(),
                y_label: "µs per actor".into(),
                bars: bars("spawn_ns_per_actor", 1e3),
            },
            BarPanel {
                title: "stop (lower is better)".into(),
                y_label: "µs per actor".into(),
                bars: bars("stop_ns_per_actor", 1e3),
            },
            BarPanel {
                title: "memory (VmRSS growth)".into(),
                y_label: "bytes per actor".into(),
                bars: bars("bytes_per_actor", 1.0),
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_round_starts_and_stops_every_actor() {
        let system = ActorSystem::new("spawn-test").unwrap();
        for mode in [Mode::Children, Mode::TopLevel] {
            let (s, t, _) = round(&system, 500, mode).unwrap();
            assert!(s > 0.0 && t > 0.0);
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(system.terminate());
    }
}
