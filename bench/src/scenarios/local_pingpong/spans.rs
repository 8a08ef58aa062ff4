//! The message spans' row under local-pingpong: volley's best config with
//! `[tracing] message_spans` on against off, alternately, with a
//! subscriber installed that keeps nothing but a count (so the figure is
//! the runtime's cost of a span per message; a real exporter adds its own).

use std::sync::atomic::{AtomicU64, Ordering};

use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use super::{best, volley_config_with, Ctx, Plan};
use crate::progress::Progress;
use crate::report::rows::LocalPingPongRow;
use crate::report::{measured, Row};

/// Alternating rounds of each side.
pub(super) const ROUNDS: usize = 3;

/// Counts the spans it is given; keeps nothing.
struct Counting(AtomicU64);

impl Subscriber for Counting {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.name() == volley::MESSAGE_SPAN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// volley's best config among `rows`, as (P, K, T).
pub(super) fn best_config(rows: &[Row<LocalPingPongRow>]) -> Option<(usize, usize, usize)> {
    let (_, r) = best(measured(rows).filter(|(s, _)| *s == "volley"))?;
    Some((
        r.pairs as usize,
        r.inflight as usize,
        r.throughput.unwrap_or(100) as usize,
    ))
}

/// Runs `config` without and with `extras`, alternately, [`ROUNDS`] times
/// each: the median msgs/s of each side, off first.
pub(super) fn alternate(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    config: (usize, usize, usize),
    extras: Extras,
) -> crate::Result<(f64, f64)> {
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        off.push(volley_config_with(ctx, plan, progress, config, Extras::NONE)?.msgs_per_sec);
        on.push(volley_config_with(ctx, plan, progress, config, extras)?.msgs_per_sec);
    }
    Ok((median(off), median(on)))
}

/// The note, or nothing when volley has no measured row or a subscriber
/// is installed already.
pub(super) fn note(
    ctx: &Ctx,
    plan: &Plan,
    progress: &Progress,
    rows: &[Row<LocalPingPongRow>],
) -> crate::Result<Option<String>> {
    let Some(config) = best_config(rows) else {
        return Ok(None);
    };
    if tracing::subscriber::set_global_default(Counting(AtomicU64::new(0))).is_err() {
        return Ok(None);
    }
    let (off, on) = alternate(ctx, plan, progress, config, Extras::SPANS)?;
    let (p, k, t) = config;
    Ok(Some(format!(
        "message spans on, counting subscriber (P={p} K={k} T={t}, median of {ROUNDS} alternating runs): {:.1} vs {:.1} M msgs/s off = {:.2}× (a span per message; printed, no target)",
        on / 1e6,
        off / 1e6,
        on / off
    )))
}

/// What a config's system turns on besides the defaults.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Extras {
    pub metrics: bool,
    pub spans: bool,
    /// The default dispatcher of kind `app-runtime` (actors as tasks on
    /// the system's tokio runtime) instead of the work-stealing pool.
    pub app_runtime: bool,
}

impl Extras {
    pub const NONE: Extras = Extras {
        metrics: false,
        spans: false,
        app_runtime: false,
    };
    pub const METRICS: Extras = Extras {
        metrics: true,
        ..Extras::NONE
    };
    pub const SPANS: Extras = Extras {
        spans: true,
        ..Extras::NONE
    };
    pub const APP_RUNTIME: Extras = Extras {
        app_runtime: true,
        ..Extras::NONE
    };
}
