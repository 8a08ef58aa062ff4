//! The rows of `sharding`: one per system and measurement, with the
//! fields the issue's `--json` asks for: `system`, then `row`, `value`
//! (`null` where the system cannot run the row yet), `unit`, `verified`
//! (every count checked), `duplicates` (ids alive on two nodes at once
//! when checked; `null` where not checked), `count` (messages or
//! activations in the row) and `note` (how it was checked, or why there is
//! no figure).

use serde::{Deserialize, Serialize};

use crate::report::{col, Column, Fmt, Metrics};

/// `sharding`: one measurement of one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardingRow {
    /// `tell`, `ask`, `activate`, `rebalance-join`, `rebalance-leave` or
    /// `singleton-kill`.
    pub row: String,
    /// msgs/s, activations/s or ms; `null` when not measured.
    pub value: Option<f64>,
    pub unit: String,
    /// Every message or answer accounted for, and no duplicate.
    pub verified: bool,
    pub duplicates: Option<u64>,
    pub count: Option<u64>,
    pub note: String,
}

impl ShardingRow {
    /// A row `system` cannot run yet: no figure, `note` says why.
    pub fn not_built(row: &str, unit: &str, why: &str) -> Self {
        ShardingRow {
            row: row.into(),
            value: None,
            unit: unit.into(),
            verified: false,
            duplicates: None,
            count: None,
            note: format!("not yet built: {why}"),
        }
    }

    /// A row whose run failed before it measured anything.
    pub fn failed(row: &str, unit: &str, why: &str) -> Self {
        ShardingRow {
            note: format!("failed: {why}"),
            ..Self::not_built(row, unit, "")
        }
    }
}

impl Metrics for ShardingRow {
    fn columns() -> Vec<Column> {
        vec![
            col("row", "row", Fmt::Plain),
            col("value", "value", Fmt::Round),
            col("unit", "unit", Fmt::Plain),
            col("verified", "verified", Fmt::Plain),
            col("duplicates", "duplicates", Fmt::Plain),
            col("count", "count", Fmt::Plain),
            col("note", "note", Fmt::Plain),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::tests::{columns_name_fields, line};

    #[test]
    fn sharding_rows_have_exactly_the_contract_fields() {
        let row = ShardingRow {
            row: "tell".into(),
            value: Some(33000.0),
            unit: "msgs/s".into(),
            verified: true,
            duplicates: Some(0),
            count: Some(300_000),
            note: "checked".into(),
        };
        assert_eq!(
            line("pekko", row.clone()),
            r#"{"system":"pekko","row":"tell","value":33000.0,"unit":"msgs/s","verified":true,"duplicates":0,"count":300000,"note":"checked"}"#
        );
        columns_name_fields(vec![row]);
    }

    #[test]
    fn a_row_not_built_has_no_figure() {
        let row = ShardingRow::not_built("tell", "msgs/s", "no region yet");
        assert_eq!(row.value, None);
        assert!(!row.verified);
        assert!(row.note.starts_with("not yet built"));
    }
}
