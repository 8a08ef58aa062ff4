//! The `app-runtime` dispatcher's rows under local-pingpong: volley's best
//! config and the one-ball pair (P=1 K=1) with actors as tasks on the
//! system's tokio runtime, each against the same config on the
//! work-stealing pool, alternately. docs/reference/dispatchers.md says
//! which kind to pick from these figures.

use super::spans::{alternate, best_config, ROUNDS};
use super::{Ctx, Extras, Plan};
use crate::progress::Progress;
use crate::report::rows::LocalPingPongRow;
use crate::report::Row;

/// Configs run per note line: each side of each comparison, ROUNDS times.
pub(super) const CONFIGS: usize = 2 * 2 * ROUNDS;

/// One note per compared config, or none when volley has no measured row.
pub(super) fn notes(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    rows: &[Row<LocalPingPongRow>],
) -> crate::Result<Vec<String>> {
    let Some(best) = best_config(rows) else {
        return Ok(Vec::new());
    };
    let one_ball = (1, 1, best.2);
    let mut notes = Vec::new();
    for config in [best, one_ball] {
        let (pool, on_runtime) = alternate(ctx, plan, progress, config, Extras::APP_RUNTIME)?;
        let (p, k, t) = config;
        notes.push(format!(
            "app-runtime dispatcher (P={p} K={k} T={t}, median of {ROUNDS} alternating runs): {:.1} vs {:.1} M msgs/s on the work-stealing pool = {:.2}×",
            on_runtime / 1e6,
            pool / 1e6,
            on_runtime / pool
        ));
    }
    Ok(notes)
}
