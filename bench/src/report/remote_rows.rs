//! The rows of the remote scenarios and of the raw-TCP baseline they are
//! measured against, with the same rules as [`super::rows`]: field order is
//! JSON order, volley-only fields are left out where a row lacks them.

use serde::{Deserialize, Serialize};

use super::{col, Column, Fmt, Metrics};

/// How volley's remote nodes ran: `processes` (1, or 2 with
/// `--two-processes`) and `threads` per actor system (e.g. `2d+1io`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    pub processes: u64,
    pub threads: String,
    /// The nodes ran TLS (`[remote.tls]`, mutual, ECDSA P-256 certificates).
    #[serde(default)]
    pub tls: bool,
}

/// `remote-pingpong`: one client count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemotePingPongRow {
    pub clients: u64,
    /// Messages both ways: clients × round trips × 2.
    pub total: u64,
    pub elapsed_ns: u64,
    pub msgs_per_sec: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflight: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batching: Option<bool>,
    #[serde(flatten)]
    pub setup: Option<Setup>,
}

impl Metrics for RemotePingPongRow {
    fn columns() -> Vec<Column> {
        vec![
            col("clients", "Num clients", Fmt::Plain),
            col("total", "Total [msg]", Fmt::Plain),
            col("msgs_per_sec", "Msgs/sec", Fmt::Round),
            col("elapsed_ns", "Total [ms]", Fmt::Millis),
        ]
    }
}

/// `remote-tell`: one way of sending.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemoteTellRow {
    pub sender: String,
    pub messages: u64,
    pub elapsed_ns: u64,
    pub msgs_per_sec: f64,
    #[serde(flatten)]
    pub setup: Setup,
}

impl Metrics for RemoteTellRow {
    fn columns() -> Vec<Column> {
        vec![
            col("sender", "sender", Fmt::Plain),
            col("messages", "messages", Fmt::Plain),
            col("elapsed_ns", "ms", Fmt::Millis),
            col("msgs_per_sec", "M msgs/s", Fmt::Millions),
        ]
    }
}

/// `remote-ask`: one way of asking at one window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemoteAskRow {
    pub mode: String,
    pub inflight: u64,
    pub requests: u64,
    pub elapsed_ns: u64,
    pub msgs_per_sec: f64,
    #[serde(flatten)]
    pub setup: Setup,
}

impl Metrics for RemoteAskRow {
    fn columns() -> Vec<Column> {
        vec![
            col("mode", "mode", Fmt::Plain),
            col("inflight", "in flight", Fmt::Plain),
            col("requests", "requests", Fmt::Plain),
            col("elapsed_ns", "ms", Fmt::Millis),
            col("msgs_per_sec", "M asks/s", Fmt::Millions),
        ]
    }
}

/// `remote-latency`: volley's asks, or raw TCP driven by the same pacer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyRow {
    pub mode: String,
    /// The open loop's rate; `null` for one in flight.
    pub offered_per_sec: Option<u64>,
    pub requests: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub achieved_per_sec: f64,
    /// volley's rows only.
    #[serde(flatten)]
    pub setup: Option<Setup>,
    /// Open-loop rows only.
    #[serde(flatten)]
    pub pacer: Option<PacerLateness>,
}

impl LatencyRow {
    /// [p50, p99, p99.9] in ns.
    pub fn percentiles(&self) -> [u64; 3] {
        [self.p50_ns, self.p99_ns, self.p999_ns]
    }
}

/// How late the open loop's pacer woke up for its sends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PacerLateness {
    pub pacer_late_p50_ns: u64,
    pub pacer_late_p99_ns: u64,
    pub pacer_late_max_ns: u64,
}

/// Raw TCP's one-way frame stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamRow {
    pub test: String,
    pub frame_bytes: u64,
    pub count: u64,
    pub elapsed_ns: u64,
    pub msgs_per_sec: f64,
    pub mb_per_sec: f64,
}

/// Raw TCP's request/response round trip, one in flight.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTripRow {
    pub test: String,
    pub frame_bytes: u64,
    pub count: u64,
    pub requests: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub mean_ns: f64,
    /// Set when shown next to volley's rows in `remote-latency`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// `raw-tcp`'s rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RawTcpRow {
    Stream(StreamRow),
    RoundTrip(RoundTripRow),
}

impl Metrics for RawTcpRow {
    fn columns() -> Vec<Column> {
        vec![
            col("test", "test", Fmt::Plain),
            col("frame_bytes", "frame B", Fmt::Plain),
            col("count", "frames", Fmt::Plain),
            col("msgs_per_sec", "M frames/s", Fmt::Millions),
            col("p50_ns", "p50 µs", Fmt::Micros),
            col("p99_ns", "p99 µs", Fmt::Micros),
            col("p999_ns", "p99.9 µs", Fmt::Micros),
        ]
    }
}

/// `remote-latency`'s rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RemoteLatencyRow {
    Latency(LatencyRow),
    RoundTrip(RoundTripRow),
}

impl RemoteLatencyRow {
    /// The open loop's rate (`None` for one in flight and round trips).
    pub fn offered_per_sec(&self) -> Option<u64> {
        match self {
            RemoteLatencyRow::Latency(l) => l.offered_per_sec,
            RemoteLatencyRow::RoundTrip(_) => None,
        }
    }

    /// [p50, p99, p99.9] in ns.
    pub fn percentiles(&self) -> [u64; 3] {
        match self {
            RemoteLatencyRow::Latency(l) => l.percentiles(),
            RemoteLatencyRow::RoundTrip(r) => [r.p50_ns, r.p99_ns, r.p999_ns],
        }
    }
}

impl Metrics for RemoteLatencyRow {
    fn columns() -> Vec<Column> {
        vec![
            col("mode", "mode", Fmt::Plain),
            col("offered_per_sec", "offered/s", Fmt::Plain),
            col("requests", "requests", Fmt::Plain),
            col("p50_ns", "p50 µs", Fmt::Micros),
            col("p99_ns", "p99 µs", Fmt::Micros),
            col("p999_ns", "p99.9 µs", Fmt::Micros),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::tests::{columns_name_fields, line};

    fn setup() -> Setup {
        Setup {
            processes: 1,
            threads: "2d+1io".into(),
            tls: false,
        }
    }

    #[test]
    fn remote_pingpong_rows_keep_their_json() {
        let volley = RemotePingPongRow {
            clients: 1,
            total: 2000,
            elapsed_ns: 5184087,
            msgs_per_sec: 385795.99455024576,
            repeat: Some(1000),
            inflight: Some(50),
            batching: Some(true),
            setup: Some(setup()),
        };
        assert_eq!(
            line("volley (batched)", volley.clone()),
            r#"{"system":"volley (batched)","clients":1,"total":2000,"elapsed_ns":5184087,"msgs_per_sec":385795.99455024576,"repeat":1000,"inflight":50,"batching":true,"processes":1,"threads":"2d+1io","tls":false}"#
        );
        columns_name_fields(vec![volley]);
    }

    #[test]
    fn remote_tell_and_ask_rows_keep_their_json() {
        let tell = RemoteTellRow {
            sender: "1 task".into(),
            messages: 20000,
            elapsed_ns: 29486237,
            msgs_per_sec: 678282.549244924,
            setup: setup(),
        };
        assert_eq!(
            line("volley", tell.clone()),
            r#"{"system":"volley","sender":"1 task","messages":20000,"elapsed_ns":29486237,"msgs_per_sec":678282.549244924,"processes":1,"threads":"2d+1io","tls":false}"#
        );
        columns_name_fields(vec![tell]);
        let ask = RemoteAskRow {
            mode: "ask app-runtime".into(),
            inflight: 100,
            requests: 5000,
            elapsed_ns: 69775585,
            msgs_per_sec: 71658.30282899097,
            setup: setup(),
        };
        assert_eq!(
            line("volley", ask.clone()),
            r#"{"system":"volley","mode":"ask app-runtime","inflight":100,"requests":5000,"elapsed_ns":69775585,"msgs_per_sec":71658.30282899097,"processes":1,"threads":"2d+1io","tls":false}"#
        );
        columns_name_fields(vec![ask]);
    }

    fn round_trip(mode: Option<&str>) -> RoundTripRow {
        RoundTripRow {
            test: "ping-pong RTT, tokio".into(),
            frame_bytes: 27,
            count: 2000,
            requests: 2000,
            p50_ns: 23055,
            p99_ns: 35455,
            p999_ns: 93119,
            mean_ns: 25997.06000000001,
            mode: mode.map(str::to_string),
        }
    }

    #[test]
    fn remote_latency_rows_keep_their_json() {
        let closed = LatencyRow {
            mode: "1 in flight".into(),
            offered_per_sec: None,
            requests: 2000,
            p50_ns: 119423,
            p99_ns: 185471,
            p999_ns: 202111,
            max_ns: 220159,
            achieved_per_sec: 8155.077475193235,
            setup: Some(setup()),
            pacer: None,
        };
        assert_eq!(
            line("volley", RemoteLatencyRow::Latency(closed.clone())),
            r#"{"system":"volley","mode":"1 in flight","offered_per_sec":null,"requests":2000,"p50_ns":119423,"p99_ns":185471,"p999_ns":202111,"max_ns":220159,"achieved_per_sec":8155.077475193235,"processes":1,"threads":"2d+1io","tls":false}"#
        );
        let pacer = Some(PacerLateness {
            pacer_late_p50_ns: 18911,
            pacer_late_p99_ns: 3647487,
            pacer_late_max_ns: 7839743,
        });
        let open = LatencyRow {
            offered_per_sec: Some(10000),
            achieved_per_sec: 10000.0,
            pacer: pacer.clone(),
            ..closed.clone()
        };
        assert_eq!(
            line("volley", RemoteLatencyRow::Latency(open.clone())),
            r#"{"system":"volley","mode":"1 in flight","offered_per_sec":10000,"requests":2000,"p50_ns":119423,"p99_ns":185471,"p999_ns":202111,"max_ns":220159,"achieved_per_sec":10000.0,"processes":1,"threads":"2d+1io","tls":false,"pacer_late_p50_ns":18911,"pacer_late_p99_ns":3647487,"pacer_late_max_ns":7839743}"#
        );
        let raw_open = LatencyRow {
            setup: None,
            ..open
        };
        assert!(
            line("raw-tcp (blocking)", RemoteLatencyRow::Latency(raw_open))
                .contains(r#""achieved_per_sec":10000.0,"pacer_late_p50_ns":18911,"#)
        );
        assert_eq!(
            line(
                "raw-tcp",
                RemoteLatencyRow::RoundTrip(round_trip(Some("1 in flight")))
            ),
            r#"{"system":"raw-tcp","test":"ping-pong RTT, tokio","frame_bytes":27,"count":2000,"requests":2000,"p50_ns":23055,"p99_ns":35455,"p999_ns":93119,"mean_ns":25997.06000000001,"mode":"1 in flight"}"#
        );
        columns_name_fields(vec![RemoteLatencyRow::Latency(closed)]);
    }

    #[test]
    fn raw_tcp_rows_keep_their_json() {
        let stream = StreamRow {
            test: "one-way stream".into(),
            frame_bytes: 27,
            count: 100000,
            elapsed_ns: 4454453,
            msgs_per_sec: 22449445.53236952,
            mb_per_sec: 606.1350293739771,
        };
        assert_eq!(
            line("raw-tcp", RawTcpRow::Stream(stream.clone())),
            r#"{"system":"raw-tcp","test":"one-way stream","frame_bytes":27,"count":100000,"elapsed_ns":4454453,"msgs_per_sec":22449445.53236952,"mb_per_sec":606.1350293739771}"#
        );
        assert_eq!(
            line("raw-tcp", RawTcpRow::RoundTrip(round_trip(None))),
            r#"{"system":"raw-tcp","test":"ping-pong RTT, tokio","frame_bytes":27,"count":2000,"requests":2000,"p50_ns":23055,"p99_ns":35455,"p999_ns":93119,"mean_ns":25997.06000000001}"#
        );
        columns_name_fields(vec![
            RawTcpRow::Stream(stream),
            RawTcpRow::RoundTrip(round_trip(None)),
        ]);
    }
}
