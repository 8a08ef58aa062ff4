//! The metrics' note under remote-pingpong (`--cases metrics`): batched
//! volley at 10 clients with `[metrics] enabled` on both nodes and a
//! Prometheus recorder installed, against the same without, alternately
//! (issue 17's target: at least 0.95×).

use metrics_exporter_prometheus::PrometheusBuilder;

use super::{Clients, Plan};
use crate::measure::{median, Workload};
use crate::progress::Progress;
use crate::report::verdict;
use crate::scenarios::remote_common::{Layout, Nodes};
use crate::scenarios::Ctx;

/// Alternating rounds of each side.
pub(super) const ROUNDS: usize = 3;
const CLIENTS: usize = 10;

/// The note; nothing with `--two-processes` (the child server has no
/// recorder) or `--no-batching`.
pub(super) fn note(ctx: &Ctx, plan: &Plan, progress: &Progress) -> crate::Result<Option<String>> {
    if plan.two_processes || !plan.batching.contains(&true) {
        return Ok(None);
    }
    // The process's global recorder (local-pingpong's note may have
    // installed one already in this process: that serves as well).
    let _ = PrometheusBuilder::new().install_recorder();
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for metrics in [false, true] {
            progress.start(&format!(
                "volley (batched), {CLIENTS} clients, metrics {}",
                if metrics { "on" } else { "off" }
            ));
            let layout = Layout {
                metrics,
                ..plan.layout
            };
            let rate = Nodes::run(&ctx.rt, layout, true, false, |nodes| {
                let mut warm = Clients::spawn(ctx, nodes, plan, true, CLIENTS)?;
                warm.run((plan.repeat / 10).max(1000))?;
                let row = warm.measure(plan.repeat, 1)?;
                Ok(row.msgs_per_sec)
            })?;
            if metrics { &mut on } else { &mut off }.push(rate);
            progress.done();
        }
    }
    let (off, on) = (median(&off), median(&on));
    let ratio = on / off;
    Ok(Some(format!(
        "metrics on, Prometheus recorder installed (batched, {CLIENTS} clients, median of {ROUNDS} alternating runs): {:.2} vs {:.2} M msgs/s off = {ratio:.2}× — target ≥ 0.95×: {}",
        on / 1e6,
        off / 1e6,
        verdict(ratio >= 0.95)
    )))
}
