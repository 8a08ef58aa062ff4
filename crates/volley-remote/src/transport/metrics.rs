//! Remoting's metrics, per association, through the `metrics` facade when
//! the system's `[metrics] enabled` is set (see volley's `metrics.rs`).
//!
//! Nothing is counted per message: lanes count the bytes of each buffer a
//! writer takes and each connection made, under the lock they hold
//! already; metered only, the writer then counts the buffer's frames and
//! records the batch's size in two histograms, after releasing that lock
//! (senders append under it); readers add the bytes and frames of each
//! read.
//! The monitor (`core/monitor.rs`) publishes the totals on its ticks, with the queued
//! bytes, the detector's phi and the heartbeat round trips measured since
//! the last tick (`liveness/rtt.rs`). An association's series stop being
//! updated once it is removed.

use metrics::Histogram;

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
    "volley_remote_control_refusals_total",
    "volley_remote_superseded_handshakes_total",
    "volley_remote_phi",
    "volley_remote_heartbeat_rtt_seconds",
    "volley_remote_associations",
    "volley_remote_address_checks_total",
    "volley_remote_address_checks_limited_total",
    "volley_remote_exported_refs",
    "volley_remote_imported_ref_bytes",
    "volley_remote_import_refusals_total",
    "volley_remote_cluster_frames_in_total",
    "volley_remote_cluster_frames_ignored_total",
    "volley_remote_cluster_frames_refused_total",
    "volley_remote_cluster_frames_out_total",
    "volley_remote_cluster_sends_dropped_total",
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

/// One lane's totals, read under its lock by the monitor's sampler
/// (`core/monitor.rs`).
pub(crate) struct LaneTraffic {
    pub(crate) bytes_out: u64,
    pub(crate) frames_out: u64,
    pub(crate) connects: u64,
    /// Bytes queued that no writer has taken yet.
    pub(crate) queued_bytes: u64,
    /// Refs the lane's export table holds.
    pub(crate) exported_refs: u64,
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
