//! The metrics' row under local-pingpong: volley's best config run with
//! `[metrics] enabled` and a Prometheus recorder installed, against the
//! same config without, alternately (issue 17's target: at least 0.95×).

use metrics_exporter_prometheus::PrometheusBuilder;

use super::spans::{alternate, best_config};
use super::{Ctx, Extras, Plan};
use crate::progress::Progress;
use crate::report::rows::LocalPingPongRow;
use crate::report::{verdict, Row};

/// Alternating rounds of each side.
pub(super) const ROUNDS: usize = super::spans::ROUNDS;

/// The note, or nothing when volley has no measured row.
pub(super) fn note(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    rows: &[Row<LocalPingPongRow>],
) -> crate::Result<Option<String>> {
    let Some(config) = best_config(rows) else {
        return Ok(None);
    };
    // The process's global recorder; a system with metrics off registers
    // nothing with it.
    PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| format!("cannot install the Prometheus recorder: {e}"))?;
    let (off, on) = alternate(ctx, plan, progress, config, Extras::METRICS)?;
    let ratio = on / off;
    let (p, k, t) = config;
    Ok(Some(format!(
        "metrics on, Prometheus recorder installed (P={p} K={k} T={t}, median of {ROUNDS} alternating runs): {:.1} vs {:.1} M msgs/s off = {ratio:.2}× — target ≥ 0.95×: {}",
        on / 1e6,
        off / 1e6,
        verdict(ratio >= 0.95)
    )))
}
