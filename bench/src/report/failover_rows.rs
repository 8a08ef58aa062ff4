//! The rows of `failover`: one per system and case, with exactly the fields
//! the issue asks for (scripts read them): `system`, then `case`,
//! `watched`, `terminated`, `false_terminated`, `watcher_alive`,
//! `detect_ms` (kill and stall-long; `null` otherwise) and
//! `reassociate_ms` (restart; `null` otherwise). The Pekko harness prints a
//! `detail` besides, which goes to the notes under the table, not into the
//! row.

use serde::{Deserialize, Serialize};

use super::{col, Column, Fmt, Metrics};

/// `failover`: one failure case of one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailoverRow {
    /// `kill`, `stall-short`, `stall-long`, `restart` or `large-messages`.
    pub case: String,
    /// Remote actors the watcher watches.
    pub watched: u64,
    /// `Terminated` signals the watcher got during the case.
    pub terminated: u64,
    /// Wrong ones among them: every one where the node did not fail
    /// (stall-short, large-messages); the duplicates (more than one per
    /// watched actor) where it did.
    pub false_terminated: u64,
    /// The watcher actor still answered after the case.
    pub watcher_alive: bool,
    /// Failure (SIGKILL or SIGSTOP) to the last watched actor's
    /// `Terminated`; `null` for the other cases, and when not every
    /// watched actor was reported before the timeout.
    pub detect_ms: Option<f64>,
    /// The restarted node up (listening, its address printed) to the first
    /// answer of the new incarnation; `null` for the other cases and when
    /// it never answered.
    pub reassociate_ms: Option<f64>,
}

impl Metrics for FailoverRow {
    fn columns() -> Vec<Column> {
        vec![
            col("case", "case", Fmt::Plain),
            col("watched", "watched", Fmt::Plain),
            col("terminated", "Terminated", Fmt::Plain),
            col("false_terminated", "false", Fmt::Plain),
            col("watcher_alive", "watcher up", Fmt::Plain),
            col("detect_ms", "detect ms", Fmt::Plain),
            col("reassociate_ms", "reassociate ms", Fmt::Plain),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::tests::{columns_name_fields, line};

    #[test]
    fn failover_rows_have_exactly_the_contract_fields() {
        let kill = FailoverRow {
            case: "kill".into(),
            watched: 10,
            terminated: 10,
            false_terminated: 0,
            watcher_alive: true,
            detect_ms: Some(1728.7),
            reassociate_ms: None,
        };
        assert_eq!(
            line("volley", kill.clone()),
            r#"{"system":"volley","case":"kill","watched":10,"terminated":10,"false_terminated":0,"watcher_alive":true,"detect_ms":1728.7,"reassociate_ms":null}"#
        );
        columns_name_fields(vec![kill]);
        // A harness line with a detail reads into the row; the detail is
        // not a row field.
        let pekko = r#"{"case":"restart","watched":10,"terminated":10,"false_terminated":0,"watcher_alive":true,"detect_ms":null,"reassociate_ms":644.1,"detail":"x"}"#;
        let row: FailoverRow = serde_json::from_str(pekko).unwrap();
        assert_eq!(row.reassociate_ms, Some(644.1));
        assert!(!line("pekko", row).contains("detail"));
    }
}
