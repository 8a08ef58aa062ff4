//! What became of cluster frames, both ways, by reason: counted with a
//! relaxed add each (cluster traffic is a few frames a second per peer),
//! read by `Remoting::cluster_frame_counts` and published as metrics by
//! the monitor.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use metrics::Counter;

/// Why a cluster frame from a peer did not reach the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// It names another cluster than this node's.
    ForeignCluster,
    /// Its node is not dialed back (wire-protocol.md §15).
    NotDialedBack,
    /// Its connection brought more than the inbound rate allows.
    RateLimited,
}

impl Refused {
    const ALL: [Refused; 3] = [
        Refused::ForeignCluster,
        Refused::NotDialedBack,
        Refused::RateLimited,
    ];

    fn label(self) -> &'static str {
        match self {
            Refused::ForeignCluster => "foreign_cluster",
            Refused::NotDialedBack => "not_dialed_back",
            Refused::RateLimited => "rate_limited",
        }
    }
}

/// Why `send_cluster` dropped a frame (`ClusterSendError::reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    NotInCluster,
    Unavailable,
    Down,
    Connecting,
    OtherIncarnation,
    OverBudget,
    Invalid,
}

impl Dropped {
    const ALL: [Dropped; 7] = [
        Dropped::NotInCluster,
        Dropped::Unavailable,
        Dropped::Down,
        Dropped::Connecting,
        Dropped::OtherIncarnation,
        Dropped::OverBudget,
        Dropped::Invalid,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Dropped::NotInCluster => "not_in_cluster",
            Dropped::Unavailable => "unavailable",
            Dropped::Down => "down",
            Dropped::Connecting => "connecting",
            Dropped::OtherIncarnation => "other_incarnation",
            Dropped::OverBudget => "over_budget",
            Dropped::Invalid => "invalid",
        }
    }
}

/// The node's counts of cluster frames.
#[derive(Default)]
pub(crate) struct ClusterCounts {
    delivered: AtomicU64,
    ignored: AtomicU64,
    refused: [AtomicU64; Refused::ALL.len()],
    sent: AtomicU64,
    dropped: [AtomicU64; Dropped::ALL.len()],
}

impl ClusterCounts {
    pub(crate) fn delivered(&self) {
        self.delivered.fetch_add(1, Relaxed);
    }
    pub(crate) fn ignored(&self) {
        self.ignored.fetch_add(1, Relaxed);
    }
    pub(crate) fn refused(&self, why: Refused) {
        self.refused[why as usize].fetch_add(1, Relaxed);
    }
    pub(crate) fn sent(&self) {
        self.sent.fetch_add(1, Relaxed);
    }
    pub(crate) fn dropped(&self, why: Dropped) {
        self.dropped[why as usize].fetch_add(1, Relaxed);
    }

    /// A copy of the counts, for the API.
    pub(crate) fn snapshot(&self) -> ClusterFrameCounts {
        let refused = |why: Refused| self.refused[why as usize].load(Relaxed);
        let dropped = |why: Dropped| self.dropped[why as usize].load(Relaxed);
        ClusterFrameCounts {
            delivered: self.delivered.load(Relaxed),
            ignored: self.ignored.load(Relaxed),
            refused_foreign_cluster: refused(Refused::ForeignCluster),
            refused_not_dialed_back: refused(Refused::NotDialedBack),
            refused_rate_limited: refused(Refused::RateLimited),
            sent: self.sent.load(Relaxed),
            dropped_not_in_cluster: dropped(Dropped::NotInCluster),
            dropped_unavailable: dropped(Dropped::Unavailable),
            dropped_down: dropped(Dropped::Down),
            dropped_connecting: dropped(Dropped::Connecting),
            dropped_other_incarnation: dropped(Dropped::OtherIncarnation),
            dropped_over_budget: dropped(Dropped::OverBudget),
            dropped_invalid: dropped(Dropped::Invalid),
        }
    }
}

/// What became of this node's cluster frames so far
/// (`Remoting::cluster_frame_counts`); the metrics
/// `volley_remote_cluster_frames_*` and `volley_remote_cluster_sends_*`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterFrameCounts {
    /// Frames from peers handed to the installed hook.
    pub delivered: u64,
    /// Frames from peers while no hook was installed.
    pub ignored: u64,
    /// Frames naming another cluster than the hook's.
    pub refused_foreign_cluster: u64,
    /// Frames from peers this node does not dial back.
    pub refused_not_dialed_back: u64,
    /// Frames over a connection's inbound rate.
    pub refused_rate_limited: u64,
    /// Frames `send_cluster` queued.
    pub sent: u64,
    /// Sends while no hook was installed.
    pub dropped_not_in_cluster: u64,
    /// Sends to an address no association could be made to.
    pub dropped_unavailable: u64,
    /// Sends to a node whose incarnation is gone.
    pub dropped_down: u64,
    /// Sends while the control connection was not up.
    pub dropped_connecting: u64,
    /// Sends naming another incarnation than the connected one.
    pub dropped_other_incarnation: u64,
    /// Sends past `cluster.queue_bytes` queued on the control lane.
    pub dropped_over_budget: u64,
    /// Sends that cannot be framed (too large for the control lane).
    pub dropped_invalid: u64,
}

/// The monitor's handles on the cluster metrics.
pub(crate) struct ClusterMetrics {
    delivered: Counter,
    ignored: Counter,
    refused: Vec<Counter>,
    sent: Counter,
    dropped: Vec<Counter>,
}

impl ClusterMetrics {
    pub(crate) fn new(system: &str) -> Self {
        let system = system.to_string();
        let by = |name: &'static str, reason: &'static str| metrics::counter!(name, "system" => system.clone(), "reason" => reason);
        ClusterMetrics {
            delivered: metrics::counter!("volley_remote_cluster_frames_in_total", "system" => system.clone()),
            ignored: metrics::counter!("volley_remote_cluster_frames_ignored_total", "system" => system.clone()),
            refused: Refused::ALL
                .iter()
                .map(|r| by("volley_remote_cluster_frames_refused_total", r.label()))
                .collect(),
            sent: metrics::counter!("volley_remote_cluster_frames_out_total", "system" => system.clone()),
            dropped: Dropped::ALL
                .iter()
                .map(|d| by("volley_remote_cluster_sends_dropped_total", d.label()))
                .collect(),
        }
    }

    /// Publishes the totals.
    pub(crate) fn record(&self, counts: &ClusterCounts) {
        self.delivered.absolute(counts.delivered.load(Relaxed));
        self.ignored.absolute(counts.ignored.load(Relaxed));
        for (counter, count) in self.refused.iter().zip(&counts.refused) {
            counter.absolute(count.load(Relaxed));
        }
        self.sent.absolute(counts.sent.load(Relaxed));
        for (counter, count) in self.dropped.iter().zip(&counts.dropped) {
            counter.absolute(count.load(Relaxed));
        }
    }
}
