//! The rows of `cluster`: one per system, cluster size and case, with
//! exactly the fields the issue's `--json` asks for: `system`, then
//! `nodes`, `case`, `ms_p50`, `ms_max` (over the repetitions),
//! `false_downs` and `lost_messages` (`null` where the case sends no
//! messages to count).

use serde::{Deserialize, Serialize};

use super::{col, Column, Fmt, Metrics};

/// `cluster`: one case at one cluster size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterRow {
    /// Members (one OS process each).
    pub nodes: u64,
    /// `join`, `receptionist`, `kill-unreachable`, `kill-removed` or `leave`.
    pub case: String,
    /// Median over the repetitions, in ms.
    pub ms_p50: f64,
    /// Slowest repetition, in ms.
    pub ms_max: f64,
    /// Members downed or removed that neither failed nor left, over all
    /// repetitions (and members that shut themselves down), counted once
    /// per repetition each.
    pub false_downs: u64,
    /// Messages sent during the case that never arrived; `null` for the
    /// cases that send none.
    pub lost_messages: Option<u64>,
}

impl Metrics for ClusterRow {
    fn columns() -> Vec<Column> {
        vec![
            col("nodes", "nodes", Fmt::Plain),
            col("case", "case", Fmt::Plain),
            col("ms_p50", "p50 ms", Fmt::Round),
            col("ms_max", "max ms", Fmt::Round),
            col("false_downs", "false downs", Fmt::Plain),
            col("lost_messages", "lost", Fmt::Plain),
        ]
    }
}

/// `cluster-sim`: one simulated cluster size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterSimRow {
    /// Simulated members.
    pub members: u64,
    /// Virtual time from the joins to every member seeing every member Up.
    pub converge_ms: f64,
    /// Bytes each member sent, on average, until then.
    pub join_bytes_per_member: f64,
    /// Bytes per member per second once the cluster is quiet.
    pub steady_bytes_per_member_per_s: f64,
    /// Packets per member per second once the cluster is quiet.
    pub steady_packets_per_member_per_s: f64,
    /// Of the quiet bytes, the anti-entropy digests' and pages' share.
    pub steady_sync_bytes_per_member_per_s: f64,
    /// Bytes per member per second later on, once the Seen entries of
    /// the last change have finished spreading.
    pub settled_bytes_per_member_per_s: f64,
    /// What the simulation cost in wall time (the simulator's cost).
    pub wall_ms: f64,
}

impl Metrics for ClusterSimRow {
    fn columns() -> Vec<Column> {
        vec![
            col("members", "members", Fmt::Plain),
            col("converge_ms", "all Up ms (virtual)", Fmt::Round),
            col("join_bytes_per_member", "join B/member", Fmt::Round),
            col(
                "steady_bytes_per_member_per_s",
                "quiet B/member/s",
                Fmt::Round,
            ),
            col(
                "steady_packets_per_member_per_s",
                "quiet packets/member/s",
                Fmt::Round,
            ),
            col(
                "steady_sync_bytes_per_member_per_s",
                "of which sync",
                Fmt::Round,
            ),
            col(
                "settled_bytes_per_member_per_s",
                "settled B/member/s",
                Fmt::Round,
            ),
            col("wall_ms", "wall ms", Fmt::Round),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::tests::{columns_name_fields, line};

    #[test]
    fn cluster_rows_have_exactly_the_contract_fields() {
        let row = ClusterRow {
            nodes: 5,
            case: "kill-removed".into(),
            ms_p50: 12034.5,
            ms_max: 13001.0,
            false_downs: 0,
            lost_messages: None,
        };
        assert_eq!(
            line("pekko", row.clone()),
            r#"{"system":"pekko","nodes":5,"case":"kill-removed","ms_p50":12034.5,"ms_max":13001.0,"false_downs":0,"lost_messages":null}"#
        );
        columns_name_fields(vec![row]);
    }
}
