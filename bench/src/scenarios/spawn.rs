//! `spawn`: time and resident memory to spawn and stop N idle actors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};

use super::{ready, Ctx, Scenario};
use crate::measure::{median, vm_rss_bytes, wait_until, Workload};
use crate::progress::Progress;
use crate::report::rows::SpawnRow;
use crate::report::{measured, verdict, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "spawn",
    about: "spawn and stop 100,000 idle actors: ns and bytes per actor",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

const DEFAULT_ACTORS: u64 = 100_000;
const WARMUP_ACTORS: u64 = 10_000;

fn run(ctx: &Ctx) -> crate::Result<Report<SpawnRow>> {
    let n = ctx.cli.actors.unwrap_or(DEFAULT_ACTORS).max(1);
    let runs = ctx.cli.runs();
    let progress = Progress::new(2);
    let peers = ctx.peers(&progress);
    progress.add_steps((ready(&peers) * runs) as u64);
    let mut report = Report::new(SCENARIO.name, crate::chart::spawn);
    for mode in modes(ctx.cli.cases.as_deref()) {
        progress.start(&format!(
            "volley: spawn/stop {n} actors ({}) × {runs}",
            mode.name()
        ));
        report
            .rows
            .push(Row::measured("volley", volley(ctx, n, runs, mode)?));
        progress.done();
    }
    let args = vec!["--actors".to_string(), n.to_string()];
    report.rows.extend(
        ctx.run_peers(&progress, peers, SCENARIO.name, &args, |r: &SpawnRow| {
            r.spawn_ns_per_actor
        }),
    );
    progress.finish();
    report.notes = summary(&report.rows);
    Ok(report)
}

/// The modes `--cases` names (`children`, `top-level`; both by default),
/// e.g. one at a time under callgrind.
fn modes(cases: Option<&[String]>) -> Vec<Mode> {
    [Mode::Children, Mode::TopLevel]
        .into_iter()
        .filter(|m| cases.is_none_or(|c| c.iter().any(|n| n == m.name())))
        .collect()
}

/// volley's figures against the targets.
fn summary(rows: &[Row<SpawnRow>]) -> Vec<String> {
    let mut notes = vec![String::new()];
    for (_, v) in measured(rows).filter(|(s, _)| *s == "volley") {
        let (s, b) = (v.spawn_ns_per_actor, v.bytes_per_actor);
        notes.push(format!(
            "volley ({}): spawn {:.3} µs/actor (target ≤ 0.5: {}), {b:.0} B/actor (target ≤ 600: {})",
            v.mode.as_deref().unwrap_or("?"),
            s / 1e3,
            verdict(s <= 500.0),
            verdict(b <= 600.0),
        ));
    }
    notes
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

/// What one round costs: spawn and stop ns per actor, VmRSS growth bytes
/// per actor.
pub struct RoundCost {
    pub spawn_ns: f64,
    pub stop_ns: f64,
    pub bytes: f64,
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

/// One round: spawn `n` actors (see [`Mode`]), wait until every
/// `pre_start` ran, stop them all, wait until every `post_stop` ran.
pub fn round(system: &ActorSystem, n: u64, mode: Mode) -> crate::Result<RoundCost> {
    let (props, started, stopped) = idle_props();
    let timeout = Duration::from_secs(120);
    let parent = match mode {
        Mode::Children => Some(system.spawn_anonymous(Props::new(|| Parent))?),
        Mode::TopLevel => None,
    };
    let mut refs: Vec<ActorRef<()>> =
        Vec::with_capacity(if parent.is_some() { 0 } else { n as usize });
    let rss0 = vm_rss_bytes().unwrap_or(0);
    let t0 = Instant::now();
    match &parent {
        Some(parent) => parent.tell(ParentMsg::Spawn(n, props)),
        None => {
            for _ in 0..n {
                refs.push(system.spawn_anonymous(props.clone())?);
            }
        }
    }
    wait_until("every actor to start", timeout, || {
        started.load(Ordering::Relaxed) == n as usize
    })?;
    let spawn = t0.elapsed();
    let rss1 = vm_rss_bytes().unwrap_or(0);
    let t1 = Instant::now();
    match &parent {
        Some(parent) => parent.tell(ParentMsg::StopAll),
        None => {
            for r in &refs {
                system.stop(r);
            }
        }
    }
    wait_until("every actor to stop", timeout, || {
        stopped.load(Ordering::Relaxed) == n as usize
    })?;
    let stop = t1.elapsed();
    if let Some(parent) = parent {
        system.stop(&parent);
        wait_until("the parent to stop", timeout, || parent.is_terminated())?;
    }
    drop(refs);
    let per = |d: Duration| d.as_nanos() as f64 / n as f64;
    Ok(RoundCost {
        spawn_ns: per(spawn),
        stop_ns: per(stop),
        bytes: rss1.saturating_sub(rss0) as f64 / n as f64,
    })
}

/// Rounds of one [`Mode`] on one actor system.
struct SpawnRounds {
    system: ActorSystem,
    mode: Mode,
}

impl Workload for SpawnRounds {
    type Run = RoundCost;
    type Row = SpawnRow;

    fn run(&mut self, actors: u64) -> crate::Result<RoundCost> {
        round(&self.system, actors, self.mode)
    }

    fn row(&self, actors: u64, cost: RoundCost) -> SpawnRow {
        SpawnRow {
            mode: Some(self.mode.name().to_string()),
            actors,
            spawn_ns_per_actor: cost.spawn_ns,
            stop_ns_per_actor: cost.stop_ns,
            bytes_per_actor: cost.bytes,
        }
    }

    fn figure(row: &SpawnRow) -> f64 {
        row.spawn_ns_per_actor
    }

    /// The median spawn and the median stop time, each on its own; memory
    /// from the first measured round (later rounds reuse pages the
    /// allocator kept).
    fn summarize(rows: Vec<SpawnRow>) -> SpawnRow {
        let spawn: Vec<f64> = rows.iter().map(|r| r.spawn_ns_per_actor).collect();
        let stop: Vec<f64> = rows.iter().map(|r| r.stop_ns_per_actor).collect();
        let first = rows.into_iter().next().expect("at least one measured run");
        SpawnRow {
            spawn_ns_per_actor: median(&spawn),
            stop_ns_per_actor: median(&stop),
            ..first
        }
    }
}

fn volley(ctx: &Ctx, n: u64, runs: usize, mode: Mode) -> crate::Result<SpawnRow> {
    // A fresh system (and so a fresh allocator state as far as possible)
    // per mode, warmed up before measuring.
    let mut rounds = SpawnRounds {
        system: ActorSystem::new("spawn")?,
        mode,
    };
    rounds.run(WARMUP_ACTORS.min(n))?;
    let row = rounds.measure(n, runs)?;
    ctx.rt.block_on(rounds.system.terminate());
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_round_starts_and_stops_every_actor() {
        let system = ActorSystem::new("spawn-test").unwrap();
        for mode in [Mode::Children, Mode::TopLevel] {
            let cost = round(&system, 500, mode).unwrap();
            assert!(cost.spawn_ns > 0.0 && cost.stop_ns > 0.0);
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(system.terminate());
    }

    #[test]
    fn cases_choose_the_modes() {
        assert_eq!(modes(None), [Mode::Children, Mode::TopLevel]);
        let top = ["top-level".to_string()];
        assert_eq!(modes(Some(&top)), [Mode::TopLevel]);
    }

    #[test]
    fn spawn_and_stop_medians_are_taken_apart_memory_from_the_first_round() {
        let row = |spawn, stop, bytes| SpawnRow {
            mode: Some("children".into()),
            actors: 10,
            spawn_ns_per_actor: spawn,
            stop_ns_per_actor: stop,
            bytes_per_actor: bytes,
        };
        let summary = SpawnRounds::summarize(vec![
            row(3.0, 10.0, 500.0),
            row(1.0, 30.0, 100.0),
            row(2.0, 20.0, 200.0),
        ]);
        assert_eq!(summary, row(2.0, 20.0, 500.0));
    }

    #[test]
    fn notes_judge_volley_against_the_targets() {
        let rows = vec![
            Row::measured(
                "volley",
                SpawnRow {
                    mode: Some("children".into()),
                    actors: 10,
                    spawn_ns_per_actor: 400.0,
                    stop_ns_per_actor: 1.0,
                    bytes_per_actor: 700.0,
                },
            ),
            Row::skipped("pekko", "java not found"),
        ];
        assert_eq!(
            summary(&rows)[1],
            "volley (children): spawn 0.400 µs/actor (target ≤ 0.5: met), 700 B/actor (target ≤ 600: MISSED)"
        );
    }
}
