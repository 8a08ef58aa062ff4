//! The node's monitor: one task that judges every failure detector twice
//! per heartbeat interval, and on the same tick lets go of idle and
//! unproven associations, gives up overdue system messages and samples
//! the association metrics. It sits with the core because it drives
//! every layer below it; each layer only offers the step it owns.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram};

use crate::transport::core::RemotingCore;
use crate::transport::idle::proof::Proofs;
use crate::transport::idle::Idleness;
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::liveness::reachability::ReachabilityEvent;
use crate::transport::metrics::LaneTraffic;
use crate::wire::Address;

/// The node's monitor: judges every detector twice per heartbeat interval
/// until remoting shuts down.
pub(crate) async fn run_monitor(core: Arc<RemotingCore>) {
    let period = (core.settings.failure_detector.heartbeat_interval / 2)
        .max(std::time::Duration::from_millis(1));
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut metrics = AssociationMetrics::new(&core);
    loop {
        ticks.tick().await;
        if core.is_shut_down() {
            return;
        }
        let now = Instant::now();
        for change in core.reachability.check(now) {
            match change {
                ReachabilityEvent::Unreachable(node) => core.node_unreachable(&node),
                ReachabilityEvent::Reachable(node) => core.node_reachable(&node),
            }
        }
        core.stop_idle_associations(now);
        core.stop_unproven_associations(now);
        core.give_up_overdue_system_messages(now);
        if let Some(metrics) = &mut metrics {
            metrics.record(&core, now);
        }
    }
}

/// The handles of one remote node.
struct Handles {
    bytes_out: Counter,
    bytes_in: Counter,
    frames_out: Counter,
    frames_in: Counter,
    queued: Gauge,
    connects: Counter,
    reconnects: Counter,
    control_refusals: Counter,
    superseded_handshakes: Counter,
    phi: Gauge,
    heartbeat_rtt: Histogram,
    exported_refs: Gauge,
}

impl Handles {
    fn register(system: &str, node: &Address) -> Self {
        let labels = [("system", system.to_string()), ("remote", node.to_string())];
        Handles {
            bytes_out: metrics::counter!("volley_remote_bytes_out_total", &labels),
            bytes_in: metrics::counter!("volley_remote_bytes_in_total", &labels),
            frames_out: metrics::counter!("volley_remote_frames_out_total", &labels),
            frames_in: metrics::counter!("volley_remote_frames_in_total", &labels),
            queued: metrics::gauge!("volley_remote_outbound_queue_bytes", &labels),
            connects: metrics::counter!("volley_remote_connects_total", &labels),
            reconnects: metrics::counter!("volley_remote_reconnects_total", &labels),
            control_refusals: metrics::counter!("volley_remote_control_refusals_total", &labels),
            superseded_handshakes: metrics::counter!(
                "volley_remote_superseded_handshakes_total",
                &labels
            ),
            phi: metrics::gauge!("volley_remote_phi", &labels),
            heartbeat_rtt: metrics::histogram!("volley_remote_heartbeat_rtt_seconds", &labels),
            exported_refs: metrics::gauge!("volley_remote_exported_refs", &labels),
        }
    }
}

/// The monitor's registry of handles, by remote node.
pub(crate) struct AssociationMetrics {
    system: String,
    every: Duration,
    last: Option<Instant>,
    associations: Gauge,
    imported_ref_bytes: Gauge,
    import_refusals: Counter,
    cluster: crate::transport::cluster::counts::ClusterMetrics,
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
            imported_ref_bytes: metrics::gauge!("volley_remote_imported_ref_bytes", "system" => system.clone()),
            import_refusals: metrics::counter!("volley_remote_import_refusals_total", "system" => system.clone()),
            cluster: crate::transport::cluster::counts::ClusterMetrics::new(&system),
            system,
            every: settings.sample_interval,
            last: None,
            by_node: HashMap::new(),
        })
    }

    /// Publishes every association's totals, at most once per sample
    /// interval.
    pub(crate) fn record(&mut self, core: &RemotingCore, now: Instant) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.last.is_some_and(|last| now - last < self.every) {
            return;
        }
        self.last = Some(now);
        let all = core.associations.all();
        self.associations.set(all.len() as f64);
        self.imported_ref_bytes
            .set(core.import_meter.bytes() as f64);
        self.import_refusals.absolute(core.import_meter.refusals());
        self.cluster.record(&core.cluster.counts);
        self.by_node
            .retain(|node, _| all.iter().any(|a| a.remote == *node));
        for association in &all {
            let node = &association.remote;
            let handles = self
                .by_node
                .entry(node.clone())
                .or_insert_with(|| Handles::register(&self.system, node));
            let mut out = LaneTraffic {
                bytes_out: 0,
                frames_out: 0,
                connects: 0,
                queued_bytes: 0,
                exported_refs: 0,
            };
            let mut reconnects = 0;
            for lane in association.lanes() {
                let t = lane.traffic();
                out.bytes_out += t.bytes_out;
                out.frames_out += t.frames_out;
                out.connects += t.connects;
                out.queued_bytes += t.queued_bytes;
                out.exported_refs += t.exported_refs;
                // A lane's first connection is not a reconnect.
                reconnects += t.connects.saturating_sub(1);
            }
            handles.bytes_out.absolute(out.bytes_out);
            handles.frames_out.absolute(out.frames_out);
            handles.connects.absolute(out.connects);
            handles.reconnects.absolute(reconnects);
            let control = association.lane(crate::wire::Lane::Control);
            handles.control_refusals.absolute(control.refused_frames());
            handles
                .superseded_handshakes
                .absolute(association.superseded_handshakes.load(Relaxed));
            handles.queued.set(out.queued_bytes as f64);
            handles.exported_refs.set(out.exported_refs as f64);
            handles
                .bytes_in
                .absolute(association.bytes_in.load(Relaxed));
            handles
                .frames_in
                .absolute(association.frames_in.load(Relaxed));
            if let Some(phi) = core.reachability.phi(node, now) {
                handles.phi.set(phi);
            }
            let rtts =
                crate::transport::support::lock(&association.heartbeat_rtt).take_unrecorded();
            for rtt in rtts {
                handles.heartbeat_rtt.record(rtt.as_secs_f64());
            }
        }
    }
}
