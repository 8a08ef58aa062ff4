//! The metrics' row under local-pingpong: volley's best config run with
//! `[metrics] enabled` and a Prometheus recorder installed, against the
//! same config without, alternately (issue 17's target: at least 0.95×).

use metrics_exporter_prometheus::PrometheusBuilder;

use super::{best, volley_config_with, Ctx, Plan};
use crate::progress::Progress;
use crate::report::rows::LocalPingPongRow;
use crate::report::{measured, verdict, Row};

/// Alternating rounds of each side.
pub(super) const ROUNDS: usize = 3;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The note, or nothing when volley has no measured row.
pub(super) fn note(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    rows: &[Row<LocalPingPongRow>],
) -> crate::Result<Option<String>> {
    let Some((_, r)) = best(measured(rows).filter(|(s, _)| *s == "volley")) else {
        return Ok(None);
    };
    let config = (
        r.pairs as usize,
        r.inflight as usize,
        r.throughput.unwrap_or(100) as usize,
    );
    // The process's global recorder; a system with metrics off registers
    // nothing with it.
    PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| format!("cannot install the Prometheus recorder: {e}"))?;
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        off.push(volley_config_with(ctx, plan, progress, config, false)?.msgs_per_sec);
        on.push(volley_config_with(ctx, plan, progress, config, true)?.msgs_per_sec);
    }
    let (off, on) = (median(off), median(on));
    let ratio = on / off;
    let (p, k, t) = config;
    Ok(Some(format!(
        "metrics on, Prometheus recorder installed (P={p} K={k} T={t}, median of {ROUNDS} alternating runs): {:.1} vs {:.1} M msgs/s off = {ratio:.2}× — target ≥ 0.95×: {}",
        on / 1e6,
        off / 1e6,
        verdict(ratio >= 0.95)
    )))
}
