//! Remoting's metrics, per association, through the `metrics` facade when
//! the system's `[metrics] enabled` is set (see volley's `metrics.rs`).
//!
//! Nothing is counted per message: lanes count the bytes of each buffer a
//! writer takes and each connection made, under the lock they hold
//! already; metered only, the writer then counts the buffer's frames and
//! records the batch's size in two histograms, after releasing that lock
//! (senders append under it); readers add the bytes and frames of each
//! read.
//! The failure monitor publishes the totals on its ticks, with the queued
//! bytes, the detector's phi and the heartbeat round trips measured since
//! the last tick (`liveness/rtt.rs`). An association's series stop being
//! updated once it is removed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram};

use crate::transport::core::RemotingCore;
use crate::wire::{Address, FRAME_HEADER_LEN};

/// Every remoting metric's name.
pub const REMOTE_METRIC_NAMES: &[&str] = &[
    "volley_remote_bytes_out_total",
    "volley_remote_bytes_in_total",
    "volley_remote_frames_out_total",
    "volley_remote_frames_in_total",
    "volley_remote_batch_frames",
    "volley_remote_batch_bytes",
    "volley_remote_outbound_queue_bytes",
    "volley_remote_connects_total",
    "volley_remote_reconnects_total",
    "volley_remote_phi",
    "volley_remote_heartbeat_rtt_seconds",
    "volley_remote_associations",
    "volley_remote_address_checks_total",
    "volley_remote_address_checks_limited_total",
    "volley_remote_exported_refs",
    "volley_remote_imported_ref_bytes",
    "volley_remote_import_refusals_total",
];

/// What one association's lanes record per batch a writer takes.
#[derive(Clone)]
pub(crate) struct LaneMeter {
    frames: Histogram,
    bytes: Histogram,
}

impl LaneMeter {
    pub(crate) fn new(system: &str, remote: &Address) -> Self {
        let labels = [
            ("system", system.to_string()),
            ("remote", remote.to_string()),
        ];
        LaneMeter {
            frames: metrics::histogram!("volley_remote_batch_frames", &labels),
            bytes: metrics::histogram!("volley_remote_batch_bytes", &labels),
        }
    }

    /// Records a batch of whole frames about to be written; returns how
    /// many frames it holds.
    pub(crate) fn batch(&self, buf: &[u8]) -> u64 {
        let frames = count_frames(buf);
        self.frames.record(frames as f64);
        self.bytes.record(buf.len() as f64);
        frames
    }
}

/// The frames in `buf`, which holds whole frames: a walk over their
/// headers (a load per frame, of bytes about to be written anyway).
fn count_frames(buf: &[u8]) -> u64 {
    let mut at = 0;
    let mut frames = 0;
    while let Some(len) = buf.get(at..at + 4) {
        let len = u32::from_le_bytes(len.try_into().expect("four bytes")) as usize;
        at += FRAME_HEADER_LEN - 1 + len;
        frames += 1;
    }
    frames
}

/// One lane's totals, read under its lock by [`AssociationMetrics`].
pub(crate) struct LaneTraffic {
    pub(crate) bytes_out: u64,
    pub(crate) frames_out: u64,
    pub(crate) connects: u64,
    /// Bytes queued that no writer has taken yet.
    pub(crate) queued_bytes: u64,
    /// Refs the lane's export table holds.
    pub(crate) exported_refs: u64,
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
            system,
            every: Duration::from_millis(settings.sample_interval_ms),
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

#[cfg(test)]
mod tests {
    use super::count_frames;
    use crate::wire::HEARTBEAT_FRAME;

    #[test]
    fn frames_are_counted_by_their_headers() {
        assert_eq!(count_frames(&[]), 0);
        assert_eq!(count_frames(&HEARTBEAT_FRAME), 1);
        let mut buf = HEARTBEAT_FRAME.to_vec();
        // A frame with a 3-byte body: length 4 (kind + body).
        buf.extend_from_slice(&[4, 0, 0, 0, 0x10, 1, 2, 3]);
        buf.extend_from_slice(&HEARTBEAT_FRAME);
        assert_eq!(count_frames(&buf), 3);
    }
}
