//! The rows of `web`: one per (system, transport, clients).

use serde::{Deserialize, Serialize};

use super::{col, Column, Fmt, Metrics};

/// `web`: ask round trips (`websocket`, `long-poll`) or server push
/// (`websocket-push`) against one server. What a row does not measure is
/// `null`: ask rows have no `bytes_per_session`, the push row no latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebRow {
    /// `websocket`, `long-poll` (asks), or `websocket-push` (messages
    /// pushed to subscribed clients).
    pub transport: String,
    /// Clients, each a connection (long-poll: a keep-alive HTTP/1.1 one).
    pub clients: u64,
    /// Asks answered per second, or push messages delivered per second.
    pub rps: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    /// What the server's resident memory grew by per idle session.
    pub bytes_per_session: Option<f64>,
}

impl Metrics for WebRow {
    fn columns() -> Vec<Column> {
        vec![
            col("transport", "transport", Fmt::Plain),
            col("clients", "clients", Fmt::Plain),
            col("rps", "req/s (push: msgs/s)", Fmt::Round),
            col("p50_ns", "p50 µs", Fmt::Micros),
            col("p99_ns", "p99 µs", Fmt::Micros),
            col("bytes_per_session", "bytes/session", Fmt::Round),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::tests::{columns_name_fields, line};

    #[test]
    fn web_rows_keep_their_json_with_nulls_where_not_measured() {
        let ask = WebRow {
            transport: "websocket".into(),
            clients: 100,
            rps: Some(25000.5),
            p50_ns: Some(3_500_000),
            p99_ns: Some(9_000_000),
            bytes_per_session: None,
        };
        assert_eq!(
            line("volley", ask.clone()),
            r#"{"system":"volley","transport":"websocket","clients":100,"rps":25000.5,"p50_ns":3500000,"p99_ns":9000000,"bytes_per_session":null}"#
        );
        let push = WebRow {
            transport: "websocket-push".into(),
            clients: 1000,
            rps: Some(400000.0),
            p50_ns: None,
            p99_ns: None,
            bytes_per_session: Some(12288.0),
        };
        assert_eq!(
            line("volley", push.clone()),
            r#"{"system":"volley","transport":"websocket-push","clients":1000,"rps":400000.0,"p50_ns":null,"p99_ns":null,"bytes_per_session":12288.0}"#
        );
        columns_name_fields(vec![ask, push]);
    }
}
