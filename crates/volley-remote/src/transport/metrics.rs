//! Remoting's metrics, per association, through the `metrics` facade when
//! the system's `[metrics] enabled` is set (see volley's `metrics.rs`).
//!
//! Nothing is counted per message: lanes count the bytes of each buffer a
//! writer takes and each connection made, under the lock they hold
//! already; readers add the bytes of each read. The failure monitor
//! publishes the totals on its ticks, with the detector's phi. An
//! association's series stop being updated once it is removed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge};

use super::core::RemotingCore;
use crate::wire::Address;

/// Every remoting metric's name.
pub const REMOTE_METRIC_NAMES: &[&str] = &[
    "volley_remote_bytes_out_total",
    "volley_remote_bytes_in_total",
    "volley_remote_connects_total",
    "volley_remote_phi",
    "volley_remote_associations",
];

/// The handles of one remote node.
struct Handles {
    bytes_out: Counter,
    bytes_in: Counter,
    connects: Counter,
    phi: Gauge,
}

/// The monitor's registry of handles, by remote node.
pub(crate) struct AssociationMetrics {
    system: String,
    every: Duration,
    last: Option<Instant>,
    associations: Gauge,
    by_node: HashMap<Address, Handles>,
}

impl AssociationMetrics {
    /// `None` unless the system's metrics are on.
    pub(crate) fn new(core: &RemotingCore) -> Option<Self> {
        let settings = &core.system.settings().metrics;
        if !settings.enabled {
            return None;
        }
        let system = core.system.name().to_string();
        Some(AssociationMetrics {
            associations: metrics::gauge!("volley_remote_associations", "system" => system.clone()),
            system,
            every: Duration::from_millis(settings.sample_interval_ms),
            last: None,
            by_node: HashMap::new(),
        })
    }

    /// Publishes every association's totals, at most once per sample
    /// interval.
    pub(crate) fn record(&mut self, core: &RemotingCore, now: Instant) {
        if self.last.is_some_and(|last| now - last < self.every) {
            return;
        }
        self.last = Some(now);
        let all = core.associations.all();
        self.associations.set(all.len() as f64);
        self.by_node
            .retain(|node, _| all.iter().any(|a| a.remote == *node));
        for association in &all {
            let node = &association.remote;
            let system = &self.system;
            let handles = self.by_node.entry(node.clone()).or_insert_with(|| {
                let labels = [("system", system.clone()), ("remote", node.to_string())];
                Handles {
                    bytes_out: metrics::counter!("volley_remote_bytes_out_total", &labels),
                    bytes_in: metrics::counter!("volley_remote_bytes_in_total", &labels),
                    connects: metrics::counter!("volley_remote_connects_total", &labels),
                    phi: metrics::gauge!("volley_remote_phi", &labels),
                }
            });
            let (bytes_out, connects) = association
                .lanes()
                .iter()
                .map(|lane| lane.traffic())
                .fold((0, 0), |(b, c), (lb, lc)| (b + lb, c + lc));
            handles.bytes_out.absolute(bytes_out);
            handles.connects.absolute(connects);
            handles.bytes_in.absolute(
                association
                    .bytes_in
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
            if let Some(phi) = core.reachability.phi(node, now) {
                handles.phi.set(phi);
            }
        }
    }
}
