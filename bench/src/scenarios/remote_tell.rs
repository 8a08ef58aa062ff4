//! `remote-tell`: kontraktor's remote tell test. A sender on node A sends
//! `Add { a, b }` (two numbers) to an adder remote-spawned on node B, with
//! `send().await` so that backpressure (a full outbound queue) waits instead
//! of dropping. The adder counts and sums; its report (asked after the last
//! message, on the same lane, so after it) must match exactly.
//!
//! The sender is either tokio tasks on the driver thread or an actor on
//! node A's dispatcher (which `tell`s, and on a full queue pipes a
//! `send().await` back to itself): the two ways an application sends.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, Context, HandleResult, Props, TellError};

use super::remote_common::{
    best_rate_note, load, report as adder_report, AdderOnB, Calc, Layout, Nodes,
};
use super::remote_tls::bench_tls;
use super::{Ctx, Scenario};
use crate::measure::{Calibration, Throughput, Workload};
use crate::progress::Progress;
use crate::report::remote_rows::RemoteTellRow;
use crate::report::{measured, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "remote-tell",
    about: "fire-and-forget two-number messages to a remote adder, msgs/s",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// Send `n` messages from `senders` tasks on the driver thread; returns the
/// messages counted at the receiver and the time until its report arrived.
pub fn tell_once(
    ctx: &Ctx,
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    n: u64,
    senders: u64,
) -> crate::Result<Throughput> {
    let dead_before = nodes.dead_letters();
    let per = n / senders;
    let n = per * senders;
    let start = Instant::now();
    let failed = ctx.rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for s in 0..senders {
            let adder = adder.clone();
            set.spawn(async move {
                let mut failed = 0u64;
                for i in 0..per {
                    let a = (s * per + i) as i64;
                    if adder.send(Calc::Add { a, b: 1 }).await.is_err() {
                        failed += 1;
                    }
                }
                failed
            });
        }
        let mut failed = 0;
        while let Some(f) = set.join_next().await {
            failed += f.unwrap_or(per);
        }
        failed
    });
    check_delivery(ctx, nodes, adder, n, failed, dead_before, start)
}

/// Checks the adder's count and sum against `n` messages sent; returns the
/// count and the time since `start` (the report included).
fn check_delivery(
    ctx: &Ctx,
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    n: u64,
    failed: u64,
    dead_before: u64,
    start: Instant,
) -> crate::Result<Throughput> {
    let (count, sum) = adder_report(&ctx.rt, adder)?;
    let elapsed = start.elapsed();
    let expected_sum = (0..n as i64).map(|a| a + 1).fold(0i64, i64::wrapping_add);
    let dead = nodes.dead_letters() - dead_before;
    if failed != 0 || count != n || sum != expected_sum || dead != 0 {
        return Err(format!(
            "remote-tell count mismatch: sent {n} ({failed} refused), the adder counted {count} \
             (sum {sum}, expected {expected_sum}), {dead} dead letters"
        )
        .into());
    }
    Ok(Throughput::new(count, elapsed))
}

/// How many messages the sender actor tells per activation.
const SLICE: u64 = 2_000;

enum SenderMsg {
    Go,
    /// A message that found the queue full was sent once there was room
    /// (`true`), or failed.
    Resumed(bool),
}

/// Sends `total` `Add`s from a dispatcher thread, `SLICE` per activation.
struct TellSender {
    adder: ActorRef<Calc>,
    total: u64,
    sent: u64,
    failed: u64,
    done: mpsc::Sender<u64>,
}

impl Actor for TellSender {
    type Msg = SenderMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: SenderMsg) -> HandleResult {
        if let SenderMsg::Resumed(ok) = msg {
            self.sent += 1;
            self.failed += u64::from(!ok);
        }
        let end = (self.sent + SLICE).min(self.total);
        while self.sent < end {
            let add = Calc::Add {
                a: self.sent as i64,
                b: 1,
            };
            match self.adder.try_tell(add) {
                Ok(()) => self.sent += 1,
                Err(TellError::Full(add)) => {
                    // Backpressure: wait for room off the dispatcher.
                    let adder = self.adder.clone();
                    ctx.pipe_to(async move { adder.send(add).await.is_ok() }, |ok| {
                        SenderMsg::Resumed(ok)
                    });
                    return Ok(());
                }
                Err(e) => return Err(format!("tell failed: {e}").into()),
            }
        }
        if self.sent < self.total {
            ctx.myself().tell(SenderMsg::Go);
        } else {
            let _ = self.done.send(self.failed);
            ctx.stop_self();
        }
        Ok(())
    }
}

/// Sends `n` messages from one actor on node A.
pub fn tell_from_actor(
    ctx: &Ctx,
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    n: u64,
) -> crate::Result<Throughput> {
    let dead_before = nodes.dead_letters();
    let (done, finished) = mpsc::channel();
    let start = Instant::now();
    let sender = nodes
        .a
        .system
        .spawn_anonymous(Props::new({
            let adder = adder.clone();
            move || TellSender {
                adder: adder.clone(),
                total: n,
                sent: 0,
                failed: 0,
                done: done.clone(),
            }
        }))
        .map_err(|e| format!("cannot spawn the sender: {e}"))?;
    sender.tell(SenderMsg::Go);
    let failed = finished
        .recv_timeout(Duration::from_secs(600))
        .map_err(|_| "the sender actor did not finish")?;
    check_delivery(ctx, nodes, adder, n, failed, dead_before, start)
}

/// Who sends the `Add`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sender {
    /// Tasks on the driver thread.
    Tasks(u64),
    /// One actor on node A's dispatcher.
    Actor,
}

impl Sender {
    const ALL: [Sender; 3] = [Sender::Tasks(1), Sender::Tasks(8), Sender::Actor];

    /// The name `--cases` knows the sender by.
    fn case(self) -> &'static str {
        match self {
            Sender::Tasks(1) => "tell-task",
            Sender::Tasks(_) => "tell-tasks",
            Sender::Actor => "tell-actor",
        }
    }

    fn name(self) -> String {
        match self {
            Sender::Tasks(1) => "1 task".into(),
            Sender::Tasks(n) => format!("{n} tasks"),
            Sender::Actor => "1 actor".into(),
        }
    }
}

/// Tells from one [`Sender`] to the adder on node B.
struct Tells<'a> {
    to: &'a AdderOnB<'a>,
    sender: Sender,
}

impl Workload for Tells<'_> {
    type Run = Throughput;
    type Row = RemoteTellRow;

    fn run(&mut self, messages: u64) -> crate::Result<Throughput> {
        let to = self.to;
        match self.sender {
            Sender::Tasks(n) => tell_once(to.ctx, to.nodes, &to.adder, messages, n),
            Sender::Actor => tell_from_actor(to.ctx, to.nodes, &to.adder, messages),
        }
    }

    fn row(&self, _messages: u64, run: Throughput) -> RemoteTellRow {
        RemoteTellRow {
            sender: self.sender.name(),
            messages: run.count,
            elapsed_ns: run.elapsed_ns(),
            msgs_per_sec: run.per_sec(),
            setup: self.to.setup.clone(),
        }
    }

    fn figure(row: &RemoteTellRow) -> f64 {
        row.msgs_per_sec
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<RemoteTellRow>> {
    let layout = Layout::from_cli(&ctx.cli);
    let runs = ctx.cli.runs();
    let quick = ctx.cli.quick;
    let progress = Progress::new(4);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(SCENARIO.name, crate::chart::throughput_bars);
    progress.start("volley: starting the nodes, warming up");
    let two_processes = ctx.cli.two_processes;
    let warm = if quick { 300_000 } else { 1_000_000 };
    let calibration = Calibration::remote(quick, 100_000.0, 200_000_000.0);
    let (senders, with_tls) = chosen(ctx.cli.cases.as_deref())?;
    let (mut rows, n) = Nodes::run(&ctx.rt, layout, true, two_processes, |nodes| {
        let adder = AdderOnB::spawn(ctx, nodes, layout)?;
        let mut ways: Vec<Tells> = senders
            .iter()
            .map(|&sender| Tells { to: &adder, sender })
            .collect();
        // A given size warms up with half of it on the first sender (no
        // calibration), so that two sizes differ by exactly 1.5× their
        // difference in messages: the callgrind method of
        // docs/benchmarks-remote.md.
        let n = match ctx.cli.messages {
            Some(n) => {
                ways[0].run((n / 2).max(1))?;
                n
            }
            None => ways[0].calibrate(warm, &calibration)?,
        };
        progress.done();
        let mut rows = Vec::new();
        for way in &mut ways {
            progress.start(&format!(
                "volley: {n} tells from {} × {runs}",
                way.sender.name()
            ));
            rows.push(Row::measured("volley", way.measure(n, runs)?));
        }
        progress.done();
        Ok((rows, n))
    })?;
    // The same sends over TLS, in this run (one process only).
    if !two_processes && with_tls {
        progress.add_steps(1);
        progress.start("volley (tls): starting the nodes, measuring");
        let tls = bench_tls()?;
        let sealed = Nodes::run_with(&ctx.rt, layout, true, false, Some(&tls), |nodes| {
            let mut adder = AdderOnB::spawn(ctx, nodes, layout)?;
            adder.setup.tls = true;
            let mut ways =
                [Sender::Tasks(1), Sender::Actor].map(|sender| Tells { to: &adder, sender });
            tell_once(ctx, nodes, &adder.adder, warm, 1)?;
            let mut rows = Vec::new();
            for way in &mut ways {
                rows.push(Row::measured("volley (tls)", way.measure(n, runs)?));
            }
            Ok(rows)
        })?;
        progress.done();
        rows.extend(sealed);
    }
    report.rows = rows;
    progress.finish();
    if let Some(note) = tls_note(&report.rows) {
        report.notes.push(note);
    }
    report.notes.push(best_rate_note(
        measured(&report.rows).map(|(_, r)| r.msgs_per_sec),
        "remote tell",
        20e6,
        "kontraktor seed: 1.9 M",
    ));
    Ok(report)
}

/// The senders `--cases` names (`tell-task`, `tell-tasks`, `tell-actor`),
/// and whether the TLS rows follow (`tls`); naming none of a kind keeps all
/// of that kind.
fn chosen(cases: Option<&[String]>) -> crate::Result<(Vec<Sender>, bool)> {
    let cases = cases.unwrap_or_default();
    if let Some(other) = cases
        .iter()
        .find(|c| c.as_str() != "tls" && !Sender::ALL.iter().any(|s| s.case() == c.as_str()))
    {
        return Err(
            format!("--cases {other}: expected tell-task, tell-tasks, tell-actor or tls").into(),
        );
    }
    let named = |c: &str| cases.iter().any(|n| n == c);
    let senders: Vec<Sender> = Sender::ALL
        .into_iter()
        .filter(|s| named(s.case()))
        .collect();
    let senders = if senders.is_empty() {
        Sender::ALL.to_vec()
    } else {
        senders
    };
    let with_tls = cases.is_empty() || named("tls");
    Ok((senders, with_tls))
}

/// TLS against plaintext, by sender, in this run.
fn tls_note(rows: &[Row<RemoteTellRow>]) -> Option<String> {
    let rate = |system: &str, sender: &str| {
        measured(rows)
            .find(|(s, r)| *s == system && r.sender == sender)
            .map(|(_, r)| r.msgs_per_sec)
    };
    let ratios: Vec<String> = ["1 task", "1 actor"]
        .iter()
        .filter_map(|sender| {
            let ratio = rate("volley (tls)", sender)? / rate("volley", sender)?;
            Some(format!("{sender} {ratio:.2}×"))
        })
        .collect();
    (!ratios.is_empty()).then(|| {
        format!(
            "TLS / plaintext in this run: {} — target ≥ 0.7×",
            ratios.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_are_named_as_in_the_rows() {
        let names: Vec<String> = [Sender::Tasks(1), Sender::Tasks(8), Sender::Actor]
            .map(Sender::name)
            .into();
        assert_eq!(names, ["1 task", "8 tasks", "1 actor"]);
    }

    #[test]
    fn cases_choose_the_senders_and_tls() {
        let cases = |list: &[&str]| -> Vec<String> { list.iter().map(|c| c.to_string()).collect() };
        assert_eq!(chosen(None).unwrap(), (Sender::ALL.to_vec(), true));
        assert_eq!(
            chosen(Some(&cases(&["tell-actor"]))).unwrap(),
            (vec![Sender::Actor], false)
        );
        assert_eq!(
            chosen(Some(&cases(&["tls"]))).unwrap(),
            (Sender::ALL.to_vec(), true)
        );
        assert!(chosen(Some(&cases(&["tell-everyone"]))).is_err());
    }
}
