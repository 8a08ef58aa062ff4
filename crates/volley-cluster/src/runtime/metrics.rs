//! The cluster's metrics (`[metrics] enabled` on the system), through the
//! `metrics` crate's facade as volley-remote's `volley_remote_*`: members
//! by status, unreachable members, the bytes of cluster traffic, the
//! split-brain resolver's decisions, the Exiting members this node, as
//! leader, removed without their confirmation, and the packets refused
//! for their formation. Every series has the labels `system`
//! and `node` (this node's address: the members of one cluster share their
//! system's name).

use std::sync::atomic::Ordering::Relaxed;

use metrics::{Counter, Gauge};

use crate::member::{ClusterState, MemberStatus};
use crate::runtime::shared::Shared;
use crate::sbr::{Decision, Downing};

/// Every metric this crate records.
pub const CLUSTER_METRIC_NAMES: &[&str] = &[
    "volley_cluster_members",
    "volley_cluster_unreachable_members",
    "volley_cluster_gossip_bytes_out_total",
    "volley_cluster_gossip_bytes_in_total",
    "volley_cluster_sbr_decisions_total",
    "volley_cluster_exiting_timeouts_total",
    "volley_cluster_packets_refused_total",
];

/// The statuses in `volley_cluster_members{status}`, in order.
const STATUSES: [(MemberStatus, &str); 7] = [
    (MemberStatus::Joining, "joining"),
    (MemberStatus::WeaklyUp, "weakly_up"),
    (MemberStatus::Up, "up"),
    (MemberStatus::Leaving, "leaving"),
    (MemberStatus::Exiting, "exiting"),
    (MemberStatus::Down, "down"),
    (MemberStatus::Removed, "removed"),
];

/// The decisions in `volley_cluster_sbr_decisions_total{decision}`.
const DECISIONS: [(Decision, &str); 5] = [
    (Decision::DownUnreachable, "down_unreachable"),
    (Decision::DownReachable, "down_reachable"),
    (Decision::DownAll, "down_all"),
    (
        Decision::DownIndirectlyConnected,
        "down_indirectly_connected",
    ),
    (
        Decision::DownSelfQuarantinedByRemote,
        "down_self_quarantined",
    ),
];

/// The driver's handles on the metrics.
pub(crate) struct ClusterMetrics {
    members: Vec<Gauge>,
    unreachable: Gauge,
    bytes_out: Counter,
    bytes_in: Counter,
    decisions: Vec<Counter>,
    exiting_timeouts: Counter,
    /// `volley_cluster_packets_refused_total{reason}`: another formation,
    /// an unreadable envelope.
    refused_other_formation: Counter,
    refused_bad_envelope: Counter,
    refused_table_full: Counter,
}

impl ClusterMetrics {
    /// The handles, when the system records metrics.
    pub(crate) fn when_enabled(system: &volley::ActorSystem, node: String) -> Option<Self> {
        if !system.settings().metrics.enabled {
            return None;
        }
        let system = system.name().to_owned();
        let labels = [("system", system), ("node", node)];
        let with = |key: &'static str, value: &'static str| {
            let mut all: Vec<(&'static str, String)> = labels.to_vec();
            all.push((key, value.to_owned()));
            all
        };
        Some(ClusterMetrics {
            members: STATUSES
                .iter()
                .map(|(_, s)| metrics::gauge!("volley_cluster_members", &with("status", s)))
                .collect(),
            unreachable: metrics::gauge!("volley_cluster_unreachable_members", &labels),
            bytes_out: metrics::counter!("volley_cluster_gossip_bytes_out_total", &labels),
            bytes_in: metrics::counter!("volley_cluster_gossip_bytes_in_total", &labels),
            decisions: DECISIONS
                .iter()
                .map(|(_, d)| {
                    metrics::counter!("volley_cluster_sbr_decisions_total", &with("decision", d))
                })
                .collect(),
            exiting_timeouts: metrics::counter!("volley_cluster_exiting_timeouts_total", &labels),
            refused_other_formation: metrics::counter!(
                "volley_cluster_packets_refused_total",
                &with("reason", "other_formation")
            ),
            refused_bad_envelope: metrics::counter!(
                "volley_cluster_packets_refused_total",
                &with("reason", "bad_envelope")
            ),
            refused_table_full: metrics::counter!(
                "volley_cluster_packets_refused_total",
                &with("reason", "table_full")
            ),
        })
    }

    /// Publishes the members by status, the unreachable count and the
    /// traffic totals.
    pub(crate) fn record(&self, state: &ClusterState, shared: &Shared) {
        for ((status, _), gauge) in STATUSES.iter().zip(&self.members) {
            let count = state.members.iter().filter(|m| m.status == *status).count();
            gauge.set(count as f64);
        }
        self.unreachable.set(state.unreachable.len() as f64);
        self.bytes_out
            .absolute(shared.gossip_bytes_out.load(Relaxed));
        self.bytes_in.absolute(shared.gossip_bytes_in.load(Relaxed));
        self.exiting_timeouts
            .absolute(shared.exiting_timeouts.load(Relaxed));
        self.refused_other_formation
            .absolute(shared.refused_other_formation.load(Relaxed));
        self.refused_bad_envelope
            .absolute(shared.refused_bad_envelope.load(Relaxed));
        self.refused_table_full
            .absolute(shared.refused_table_full.load(Relaxed));
    }

    /// Counts one decision of the split-brain resolver.
    pub(crate) fn decided(&self, downing: &Downing) {
        let index = DECISIONS.iter().position(|(d, _)| *d == downing.decision);
        if let Some(counter) = index.and_then(|i| self.decisions.get(i)) {
            counter.increment(1);
        }
    }
}
