//! The `kontraktor` scenario's row: `{system, test, sender, msgs_per_s,
//! in_flight, verified}`.

use serde::Serialize;

use crate::report::{col, Column, Fmt, Metrics};

/// The seed's two tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// "tell sum": a stream of pairs, the receiver keeps a running sum.
    Tell,
    /// "ask sum": each pair answered with its sum.
    Ask,
}

impl Test {
    pub fn name(self) -> &'static str {
        match self {
            Test::Tell => "tell",
            Test::Ask => "ask",
        }
    }
}

/// One system, one test, one kind of sender: the median of the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KontraktorRow {
    pub test: Test,
    /// Who sends: "actor", "tasks", "10 client actors", ...
    pub sender: String,
    pub msgs_per_s: f64,
    /// Asks outstanding at most (for a system that bounds them by a
    /// window, the window); `null` for tell.
    pub in_flight: Option<u64>,
    /// Both sides counted every message and the right sum, in every run.
    pub verified: bool,
}

impl Metrics for KontraktorRow {
    fn columns() -> Vec<Column> {
        vec![
            col("test", "test", Fmt::Plain),
            col("sender", "sender", Fmt::Plain),
            col("msgs_per_s", "M msgs/s", Fmt::Millions),
            col("in_flight", "in flight", Fmt::Plain),
            col("verified", "verified", Fmt::Plain),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_serializes_as_the_contract_says() {
        let row = crate::report::Row::measured(
            "kontraktor",
            KontraktorRow {
                test: Test::Ask,
                sender: "1 actor".into(),
                msgs_per_s: 860000.0,
                in_flight: Some(20000),
                verified: true,
            },
        );
        assert_eq!(
            serde_json::to_string(&row).unwrap(),
            r#"{"system":"kontraktor","test":"ask","sender":"1 actor","msgs_per_s":860000.0,"in_flight":20000,"verified":true}"#
        );
    }
}
