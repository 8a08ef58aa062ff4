//! `kontraktor`: the seed's own table ("Don't REST!", remoting-benchmarks)
//! reproduced here, with kontraktor itself. Two tests, each in two
//! processes: "tell sum" (a stream of `(a, b)` pairs, the receiver keeps a
//! running sum) and "ask sum" (each pair answered with `a + b`, thousands in
//! flight). Rows: volley from actors and from tokio tasks (remote-tell's
//! and remote-ask's senders), kontraktor 4.22 (`bench/peers/kontraktor`),
//! and Pekko Artery (`bench/peers/pekko`'s sum test, see [`pekko`]). Every
//! row is verified on both sides: see [`verify`].

pub mod ask_many;
pub mod chart;
pub mod peer;
pub mod pekko;
pub mod row;
pub mod verify;
pub mod volley_rows;

use self::row::{KontraktorRow, Test};
use self::volley_rows::Sender;
use super::remote_common::{load, AdderOnB, Layout, Nodes};
use super::{Ctx, Scenario};
use crate::cli::PeerSelection;
use crate::progress::Progress;
use crate::report::{measured, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "kontraktor",
    about: "the seed's tell sum / ask sum, volley vs kontraktor 4.22 and Pekko Artery, two processes, msgs/s",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// The seed's table (20 cores, 2015): (system, tell/s, ask/s).
pub const SEED: [(&str, f64, f64); 2] = [("kontraktor", 1.9e6, 0.86e6), ("Akka", 120e3, 65e3)];

/// Messages per run: (tell, ask); `--messages` and `--requests` override.
fn sizes(ctx: &Ctx) -> (u64, u64) {
    let (tell, ask) = if ctx.cli.quick {
        (300_000, 200_000)
    } else {
        (2_000_000, 1_000_000)
    };
    (
        ctx.cli.messages.unwrap_or(tell),
        ctx.cli.requests.unwrap_or(ask),
    )
}

/// volley's senders, in table order.
const VOLLEY: [Sender; 6] = [
    Sender::TellActor,
    Sender::TellTask,
    Sender::AskActors {
        clients: 10,
        window: 1_000,
    },
    Sender::AskTasks { tasks: 10_000 },
    Sender::AskTasksApp {
        tasks: 10_000,
        workers: 2,
    },
    Sender::AskTasksMany {
        tasks: 10,
        window: 1_000,
    },
];

/// volley's senders that `--cases` names: `tell-actor`, `tell-task`,
/// `ask-actors`, `ask-tasks`, `ask-tasks-app`, `ask-tasks-many`, e.g. to
/// profile one of them. By default all but `ask-tasks-many`, which is an
/// experiment (docs/benchmarks-kontraktor.md, "Where the wall-clock time
/// goes"), not a row of the table.
fn volley_senders(cases: Option<&[String]>) -> crate::Result<Vec<Sender>> {
    let Some(cases) = cases else {
        return Ok(VOLLEY
            .into_iter()
            .filter(|s| !matches!(s, Sender::AskTasksMany { .. }))
            .collect());
    };
    cases
        .iter()
        .map(|case| {
            VOLLEY
                .into_iter()
                .find(|s| s.case() == case)
                .ok_or_else(|| {
                    format!(
                        "--cases {case}: expected tell-actor, tell-task, ask-actors, ask-tasks, \
                         ask-tasks-app or ask-tasks-many"
                    )
                    .into()
                })
        })
        .collect()
}

fn run(ctx: &Ctx) -> crate::Result<Report<KontraktorRow>> {
    let (tell_n, ask_n) = sizes(ctx);
    let senders = volley_senders(ctx.cli.cases.as_deref())?
        .into_iter()
        .map(|s| s.with_tasks(ctx.cli.inflight))
        .collect::<Vec<_>>();
    let runs = ctx.cli.runs();
    let progress = Progress::new(senders.len() as u64 + 5);
    progress.note(&format!("load before the run: {}", load()));
    let mut report = Report::new(SCENARIO.name, chart::chart);
    let layout = Layout::from_cli(&ctx.cli);
    progress.start("volley: starting node A here and node B in a child process");
    let volley = Nodes::run(&ctx.rt, layout, true, true, |nodes| {
        let adder = AdderOnB::spawn(ctx, nodes, layout)?;
        progress.done();
        let mut rows = Vec::new();
        for sender in senders {
            let n = if sender.test() == Test::Tell {
                tell_n
            } else {
                ask_n
            };
            progress.start(&format!(
                "volley: {n} {} from {} × {runs}",
                sender.test().name(),
                sender.name()
            ));
            rows.push(match sender.measure(&adder, n, runs) {
                Ok(row) => Row::measured("volley", row),
                Err(e) => Row::skipped("volley", &format!("{}: {e}", sender.name())),
            });
            progress.done();
        }
        Ok(rows)
    })?;
    report.rows = volley;
    if ctx.cli.peers != Some(PeerSelection::None) {
        report
            .rows
            .extend(kontraktor_rows(ctx, &progress, tell_n, ask_n, runs));
        report.rows.extend(pekko::rows(
            &ctx.root,
            &progress,
            ctx.cli.no_build,
            [(Test::Tell, tell_n), (Test::Ask, ask_n)],
            runs,
        ));
    }
    progress.finish();
    report.notes.push(format!("load after the run: {}", load()));
    report.notes.extend(ratio_notes(&report.rows));
    report.notes.push(seed_note());
    Ok(report)
}

/// kontraktor's two rows, or one skipped row saying why.
fn kontraktor_rows(
    ctx: &Ctx,
    progress: &Progress,
    tell_n: u64,
    ask_n: u64,
    runs: usize,
) -> Vec<Row<KontraktorRow>> {
    let jar = match peer::jar(&ctx.root, progress, ctx.cli.no_build) {
        Ok(jar) => jar,
        Err(why) => {
            progress.note(&format!("skipping kontraktor: {why}"));
            return vec![Row::skipped("kontraktor", &why)];
        }
    };
    [(Test::Tell, tell_n), (Test::Ask, ask_n)]
        .into_iter()
        .map(|(test, n)| {
            progress.start(&format!(
                "kontraktor: {n} {} × {runs} (two JVMs)",
                test.name()
            ));
            let row = match peer::measure(&jar, test, n, runs) {
                Ok(row) => Row::measured("kontraktor", row),
                Err(why) => Row::skipped("kontraktor", &format!("{}: {why}", test.name())),
            };
            progress.done();
            row
        })
        .collect()
}

/// volley's best sender per test against kontraktor's, in this run.
pub fn ratio_notes(rows: &[Row<KontraktorRow>]) -> Vec<String> {
    let rate = |system: &str, test: Test, sender: Option<&str>| {
        measured(rows)
            .filter(|(s, r)| *s == system && r.test == test && r.verified)
            .filter(|(_, r)| sender.is_none_or(|name| r.sender.contains(name)))
            .map(|(_, r)| r.msgs_per_s)
            .fold(None, |best: Option<f64>, x| {
                Some(best.map_or(x, |b| b.max(x)))
            })
    };
    let mut notes = Vec::new();
    let cases = [
        (Test::Tell, None, "tell sum", 10.0),
        (
            Test::Ask,
            Some("client actors"),
            "ask sum from actors",
            10.0,
        ),
        (Test::Ask, Some("tasks"), "ask sum from tokio tasks", 5.0),
    ];
    for (test, sender, what, target) in cases {
        if let (Some(v), Some(k)) = (rate("volley", test, sender), rate("kontraktor", test, None)) {
            let ratio = v / k;
            notes.push(format!(
                "{what}: volley / kontraktor = {ratio:.1}× — target ≥ {target}×: {}",
                crate::report::verdict(ratio >= target)
            ));
        }
    }
    notes
}

fn seed_note() -> String {
    let cells: Vec<String> = SEED
        .iter()
        .map(|(s, t, a)| format!("{s} {:.2} M tell/s, {:.2} M ask/s", t / 1e6, a / 1e6))
        .collect();
    format!(
        "the seed's table (20 cores, another machine and year): {}",
        cells.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: &str, test: Test, sender: &str, rate: f64) -> Row<KontraktorRow> {
        Row::measured(
            system,
            KontraktorRow {
                test,
                sender: sender.into(),
                msgs_per_s: rate,
                in_flight: None,
                verified: true,
            },
        )
    }

    #[test]
    fn ratios_compare_volleys_best_sender_with_kontraktor() {
        let rows = vec![
            row("volley", Test::Tell, "1 actor", 10e6),
            row("volley", Test::Tell, "1 task", 5e6),
            row("volley", Test::Ask, "10 client actors", 8e6),
            row("volley", Test::Ask, "ask from 10000 tasks", 1e6),
            row("kontraktor", Test::Tell, "1 actor", 2e6),
            row("kontraktor", Test::Ask, "1 actor", 0.5e6),
        ];
        assert_eq!(
            ratio_notes(&rows),
            [
                "tell sum: volley / kontraktor = 5.0× — target ≥ 10×: MISSED",
                "ask sum from actors: volley / kontraktor = 16.0× — target ≥ 10×: met",
                "ask sum from tokio tasks: volley / kontraktor = 2.0× — target ≥ 5×: MISSED",
            ]
        );
    }

    #[test]
    fn cases_pick_volleys_senders_by_name() {
        assert_eq!(volley_senders(None).unwrap(), VOLLEY[..5].to_vec());
        let many = ["ask-tasks-many".to_string()];
        assert_eq!(volley_senders(Some(&many)).unwrap(), [VOLLEY[5]]);
        let cases = ["ask-tasks".to_string(), "tell-actor".to_string()];
        assert_eq!(
            volley_senders(Some(&cases)).unwrap(),
            [VOLLEY[3], Sender::TellActor]
        );
        let unknown = volley_senders(Some(&["ask".to_string()])).unwrap_err();
        assert!(
            unknown.to_string().contains("--cases ask: expected"),
            "{unknown}"
        );
    }

    #[test]
    fn an_unverified_row_is_left_out_of_the_ratios() {
        let mut unverified = row("kontraktor", Test::Tell, "1 actor", 1e6);
        if let crate::report::Outcome::Measured(r) = &mut unverified.outcome {
            r.verified = false;
        }
        let rows = vec![row("volley", Test::Tell, "1 actor", 10e6), unverified];
        assert!(ratio_notes(&rows).is_empty());
        assert!(seed_note().contains("kontraktor 1.90 M tell/s, 0.86 M ask/s"));
    }
}
