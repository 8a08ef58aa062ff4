//! The rows of the local scenarios (`local-pingpong`, `spawn`, `ask-local`,
//! `router`): one struct per scenario whose serialized fields, in field
//! order, are the JSON volley's rows carry after their `system`. Rows that
//! peers also produce are `Deserialize` too (a peer's line is read into
//! one, and printed as the harness printed it, see [`super::Reported`]);
//! fields only volley reports are optional and left out when absent.

use serde::{Deserialize, Serialize};

use super::{col, Column, Fmt, Metrics};

/// `local-pingpong`: one (pairs, in flight, throughput) config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalPingPongRow {
    pub pairs: u64,
    pub inflight: u64,
    /// The dispatcher throughput; `null` for systems without that knob.
    pub throughput: Option<u64>,
    pub messages: u64,
    pub elapsed_ns: u64,
    pub msgs_per_sec: f64,
}

impl Metrics for LocalPingPongRow {
    fn columns() -> Vec<Column> {
        vec![
            col("pairs", "P", Fmt::Plain),
            col("inflight", "K", Fmt::Plain),
            col("throughput", "T", Fmt::Plain),
            col("messages", "messages", Fmt::Plain),
            col("elapsed_ns", "ms", Fmt::Millis),
            col("msgs_per_sec", "M msgs/s", Fmt::Millions),
        ]
    }
}

/// `spawn`: spawning and stopping idle actors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnRow {
    /// volley's way of spawning (`children`, `top-level`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    pub actors: u64,
    pub spawn_ns_per_actor: f64,
    pub stop_ns_per_actor: f64,
    pub bytes_per_actor: f64,
}

impl Metrics for SpawnRow {
    fn columns() -> Vec<Column> {
        vec![
            col("mode", "volley mode", Fmt::Plain),
            col("actors", "actors", Fmt::Plain),
            col("spawn_ns_per_actor", "spawn µs/actor", Fmt::Micros),
            col("stop_ns_per_actor", "stop µs/actor", Fmt::Micros),
            col("bytes_per_actor", "bytes/actor", Fmt::Round),
        ]
    }
}

/// `ask-local`: in-process request/response latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskLocalRow {
    /// volley's way of asking (`ask`, `actor-reply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    pub requests: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub mean_ns: f64,
}

impl Metrics for AskLocalRow {
    fn columns() -> Vec<Column> {
        vec![
            col("mode", "volley mode", Fmt::Plain),
            col("requests", "requests", Fmt::Plain),
            col("p50_ns", "p50 µs", Fmt::Micros),
            col("p99_ns", "p99 µs", Fmt::Micros),
            col("mean_ns", "mean µs", Fmt::Micros),
        ]
    }
}

/// `router`: tells through the pool router or straight to the routees.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouterRow {
    pub mode: String,
    pub routees: u64,
    pub senders: u64,
    pub messages: u64,
    pub elapsed_ns: u64,
    pub msgs_per_sec: f64,
}

impl Metrics for RouterRow {
    fn columns() -> Vec<Column> {
        vec![
            col("mode", "mode", Fmt::Plain),
            col("routees", "routees", Fmt::Plain),
            col("senders", "senders", Fmt::Plain),
            col("messages", "messages", Fmt::Plain),
            col("msgs_per_sec", "M msgs/s", Fmt::Millions),
        ]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::Row;

    /// The row as one JSON line, `system` first.
    pub(crate) fn line<M: Serialize>(system: &str, metrics: M) -> String {
        serde_json::to_string(&Row::measured(system, metrics)).unwrap()
    }

    /// Every column shows a key that one of the rows' JSON has.
    pub(crate) fn columns_name_fields<M: Metrics>(rows: Vec<M>) {
        let values: Vec<serde_json::Value> = rows
            .into_iter()
            .map(|m| serde_json::to_value(Row::measured("x", m)).unwrap())
            .collect();
        for c in M::columns() {
            assert!(
                values.iter().any(|v| v.get(c.key).is_some()),
                "column {} in none of {values:?}",
                c.key
            );
        }
    }

    pub(crate) fn pingpong(
        pairs: u64,
        inflight: u64,
        t: Option<u64>,
        rate: f64,
    ) -> LocalPingPongRow {
        LocalPingPongRow {
            pairs,
            inflight,
            throughput: t,
            messages: 20000,
            elapsed_ns: 9533555,
            msgs_per_sec: rate,
        }
    }

    #[test]
    fn local_pingpong_rows_keep_their_json() {
        let volley = pingpong(4, 100, Some(1), 2097853.319144852);
        assert_eq!(
            line("volley", volley.clone()),
            r#"{"system":"volley","pairs":4,"inflight":100,"throughput":1,"messages":20000,"elapsed_ns":9533555,"msgs_per_sec":2097853.319144852}"#
        );
        // The Rust frameworks have no throughput knob: an explicit null.
        assert!(line("actix", pingpong(4, 100, None, 1e8)).contains(r#""throughput":null,"#));
        columns_name_fields(vec![volley]);
    }

    #[test]
    fn spawn_and_ask_rows_keep_their_json() {
        let spawn = SpawnRow {
            mode: Some("children".into()),
            actors: 2000,
            spawn_ns_per_actor: 2354.3205,
            stop_ns_per_actor: 1756.1125,
            bytes_per_actor: 487.424,
        };
        assert_eq!(
            line("volley", spawn.clone()),
            r#"{"system":"volley","mode":"children","actors":2000,"spawn_ns_per_actor":2354.3205,"stop_ns_per_actor":1756.1125,"bytes_per_actor":487.424}"#
        );
        let peer = SpawnRow {
            mode: None,
            ..spawn.clone()
        };
        assert!(line("kameo", peer).starts_with(r#"{"system":"kameo","actors":2000,"#));
        columns_name_fields(vec![spawn]);
        let ask = AskLocalRow {
            mode: Some("ask".into()),
            requests: 500,
            p50_ns: 10759,
            p99_ns: 22047,
            mean_ns: 11662.536000000006,
        };
        assert_eq!(
            line("volley", ask.clone()),
            r#"{"system":"volley","mode":"ask","requests":500,"p50_ns":10759,"p99_ns":22047,"mean_ns":11662.536000000006}"#
        );
        columns_name_fields(vec![ask]);
    }

    #[test]
    fn router_rows_keep_their_json() {
        let row = RouterRow {
            mode: "round-robin pool".into(),
            routees: 8,
            senders: 2,
            messages: 200000,
            elapsed_ns: 127237057,
            msgs_per_sec: 1571869.113571214,
        };
        assert_eq!(
            line("volley", row.clone()),
            r#"{"system":"volley","mode":"round-robin pool","routees":8,"senders":2,"messages":200000,"elapsed_ns":127237057,"msgs_per_sec":1571869.113571214}"#
        );
        columns_name_fields(vec![row]);
    }

    #[test]
    fn a_skipped_row_is_system_and_reason() {
        let row: Row<SpawnRow> = Row::skipped("pekko", "java not found");
        assert_eq!(
            serde_json::to_string(&row).unwrap(),
            r#"{"system":"pekko","skipped":"java not found"}"#
        );
    }
}
