//! `cluster-sim`: how the cluster's cost grows with its size, in volley's
//! deterministic simulator (`volley_cluster::sim`): N members on a virtual
//! clock and a simulated LAN (foca's LAN settings, short delays, no loss)
//! join through three seed nodes. Per size: the virtual time until every
//! member sees every member Up with one leader, the bytes each member sent
//! until then, and the bytes and packets per member per second over the
//! next [`STEADY`] of a quiet cluster. The wall time is the simulator's
//! own cost, not the cluster's. No other system has a simulator to put
//! beside it; this is the "how the cost grows" row, next to the
//! `cluster` scenario's real processes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley_cluster::sim::{SimConfig, SimStats, Simulation};
use volley_cluster::{Addr, MemberStatus};

use super::{Ctx, Scenario};
use crate::chart::{bars, BarPanel};
use crate::progress::Progress;
use crate::report::cluster_rows::ClusterSimRow;
use crate::report::{measured, Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "cluster-sim",
    about: "simulated cluster of 50/200/1000 members: convergence time and gossip bytes per member",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// The quiet period measured after convergence.
const STEADY: Duration = Duration::from_secs(30);
/// The later quiet period, once the last change's Seen entries have
/// spread, measured from this long after convergence for [`STEADY`].
const SETTLED_AFTER: Duration = Duration::from_secs(60);
/// How far the virtual clock moves between two looks at the views.
const STEP: Duration = Duration::from_millis(100);
/// Virtual time after which a size is reported as not converged.
const LIMIT: Duration = Duration::from_secs(600);
/// The simulation's seed: a run replays exactly.
const SEED: u64 = 7;

fn run(ctx: &Ctx) -> crate::Result<Report<ClusterSimRow>> {
    let sizes = match &ctx.cli.nodes {
        Some(sizes) => sizes.clone(),
        None if ctx.cli.quick => vec![50],
        None => vec![50, 200, 1000],
    };
    let progress = Progress::new(sizes.len() as u64);
    let mut report = Report::new(SCENARIO.name, chart);
    for members in sizes {
        progress.start(&format!("volley (simulated): {members} members join"));
        report.rows.push(match simulate(members) {
            Ok(row) => Row::measured("volley", row),
            Err(why) => Row::skipped("volley", &why),
        });
        progress.done();
    }
    progress.finish();
    report.notes = vec![
        String::new(),
        format!(
            "seed {SEED}; foca's LAN settings for N members; joining through 3 seed nodes; \
             quiet: the {}s after convergence (of which sync: anti-entropy digests and pages); \
             settled: the {}s from {}s after convergence; virtual time, one thread",
            STEADY.as_secs(),
            STEADY.as_secs(),
            SETTLED_AFTER.as_secs()
        ),
    ];
    Ok(report)
}

/// One size: join, converge, then a quiet period.
fn simulate(members: usize) -> Result<ClusterSimRow, String> {
    let wall = Instant::now();
    let mut sim = Simulation::new(SimConfig::lan(SEED, members as u32));
    let addrs: Vec<Addr> = (0..members).map(address).collect();
    for addr in &addrs {
        sim.start_node(&addr.0, addr.1);
    }
    let seed_nodes = &addrs[..3.min(members)];
    for addr in &addrs {
        sim.join_seed_nodes(addr, seed_nodes);
    }
    let converged = sim
        .run_until(LIMIT, STEP, |sim| all_up(sim, &addrs))
        .ok_or_else(|| format!("{members} members not all Up within {LIMIT:?} (seed {SEED})"))?;
    let joined = sim.stats();
    sim.run_for(STEADY);
    let after = sim.stats();
    sim.run_for(SETTLED_AFTER - STEADY);
    let settling = sim.stats();
    sim.run_for(STEADY);
    let settled = sim.stats();
    let per_member = |n: u64| n as f64 / members as f64;
    let sync_bytes = |stats: &SimStats| stats.digest_bytes_sent + stats.page_bytes_sent;
    Ok(ClusterSimRow {
        members: members as u64,
        converge_ms: converged.as_secs_f64() * 1e3,
        join_bytes_per_member: per_member(joined.bytes_sent),
        steady_bytes_per_member_per_s: per_member(after.bytes_sent - joined.bytes_sent)
            / STEADY.as_secs_f64(),
        steady_packets_per_member_per_s: per_member(after.packets_sent - joined.packets_sent)
            / STEADY.as_secs_f64(),
        steady_sync_bytes_per_member_per_s: per_member(sync_bytes(&after) - sync_bytes(&joined))
            / STEADY.as_secs_f64(),
        settled_bytes_per_member_per_s: per_member(settled.bytes_sent - settling.bytes_sent)
            / STEADY.as_secs_f64(),
        wall_ms: wall.elapsed().as_secs_f64() * 1e3,
    })
}

/// The simulated address of the `index`th member.
fn address(index: usize) -> Addr {
    (
        Arc::from(format!("10.0.{}.{}", index / 250, index % 250 + 1)),
        2552,
    )
}

/// Whether every member sees exactly `group`, all Up, with one leader.
/// It counts instead of copying each node's state: this runs every
/// [`STEP`] on every member.
fn all_up(sim: &Simulation, group: &[Addr]) -> bool {
    let mut leaders = BTreeSet::new();
    for addr in group {
        let Some(core) = sim.node(addr) else {
            return false;
        };
        if core.table_len() != group.len()
            || core.count_members(|m| m.status == MemberStatus::Up) != group.len()
        {
            return false;
        }
        leaders.insert(core.leader().cloned());
    }
    leaders.len() == 1 && leaders.iter().all(Option::is_some)
}

/// Convergence time and bytes per member, by size.
fn chart(report: &Report<ClusterSimRow>, path: &std::path::Path) -> crate::Result<()> {
    let by_size = |value: fn(&ClusterSimRow) -> f64| -> Vec<(String, f64)> {
        measured(&report.rows)
            .map(|(_, r)| (format!("{} members", r.members), value(r)))
            .collect()
    };
    bars(
        path,
        &report.heading("simulated cluster: cost by size"),
        &[
            BarPanel {
                title: "join → all Up everywhere (virtual)".into(),
                y_label: "s".into(),
                bars: by_size(|r| r.converge_ms / 1e3),
            },
            BarPanel {
                title: "bytes sent until then".into(),
                y_label: "KiB per member".into(),
                bars: by_size(|r| r.join_bytes_per_member / 1024.0),
            },
            BarPanel {
                title: "quiet cluster, first 30 s".into(),
                y_label: "bytes per member per s".into(),
                bars: by_size(|r| r.steady_bytes_per_member_per_s),
            },
            BarPanel {
                title: "settled cluster".into(),
                y_label: "bytes per member per s".into(),
                bars: by_size(|r| r.settled_bytes_per_member_per_s),
            },
        ],
    )
}
