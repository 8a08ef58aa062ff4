//! Charts of the remote scenarios and raw TCP: remote-pingpong msgs/s
//! against clients (with Akka.NET's published figures as dashed reference
//! lines), remote-latency percentiles against the request rate, raw TCP's
//! figures and the single-figure throughput scenarios as bars.

use std::path::Path;

use plotters::style::RGBColor;

use super::{bars, color, log_lines, shade, BarPanel, Line};
use crate::report::remote_rows::{
    RawTcpRow, RemoteAskRow, RemoteLatencyRow, RemotePingPongRow, RemoteTellRow,
};
use crate::report::rows::RouterRow;
use crate::report::{measured, Report};

/// Akka.NET v1.4.14 RemotePingPong, from the seed (clients, msgs/s).
pub const AKKA_NET_BATCHED: &[(f64, f64)] = &[
    (1.0, 107759.0),
    (5.0, 193312.0),
    (10.0, 193611.0),
    (15.0, 191657.0),
    (20.0, 191645.0),
    (25.0, 190462.0),
    (30.0, 189281.0),
];
pub const AKKA_NET_UNBATCHED: &[(f64, f64)] = &[
    (1.0, 73341.0),
    (5.0, 111745.0),
    (10.0, 120475.0),
    (15.0, 124559.0),
    (20.0, 126343.0),
    (25.0, 128469.0),
    (30.0, 129163.0),
];

/// remote-pingpong: msgs/s against clients, one line per system, plus the
/// seed's Akka.NET figures.
pub fn remote_pingpong(report: &Report<RemotePingPongRow>, path: &Path) -> crate::Result<()> {
    let rows: Vec<(&str, &RemotePingPongRow)> = measured(&report.rows).collect();
    let mut names: Vec<&str> = Vec::new();
    for (s, _) in &rows {
        if !names.contains(s) {
            names.push(s);
        }
    }
    let mut lines: Vec<Line> = names
        .iter()
        .map(|&s| {
            let mut points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|(system, _)| *system == s)
                .map(|(_, r)| (r.clients as f64, r.msgs_per_sec))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut line = Line::of_system(s, points);
            if s.contains("unbatched") {
                line.color = shade(line.color, 0.55);
            }
            line
        })
        .collect();
    for (name, points, color) in [
        (
            "Akka.NET 1.4.14 batched (seed)",
            AKKA_NET_BATCHED,
            RGBColor(23, 190, 207),
        ),
        (
            "Akka.NET 1.4.14 unbatched (seed)",
            AKKA_NET_UNBATCHED,
            RGBColor(120, 120, 120),
        ),
    ] {
        lines.push(Line {
            name: name.into(),
            points: points.to_vec(),
            dashed: true,
            color,
        });
    }
    log_lines(
        path,
        &report.heading("remote-pingpong (50 in flight per client)"),
        "clients",
        "msgs/s (log)",
        &lines,
    )
}

/// remote-latency: p50/p99/p99.9 against the rate (the one-in-flight run
/// at its achieved rate), raw TCP's round trip as dashed levels.
pub fn remote_latency(report: &Report<RemoteLatencyRow>, path: &Path) -> crate::Result<()> {
    let rows: Vec<(&str, &RemoteLatencyRow)> = measured(&report.rows).collect();
    let volley: Vec<_> = rows
        .iter()
        .filter(|(s, _)| *s == "volley")
        .filter_map(|(_, r)| match r {
            RemoteLatencyRow::Latency(l) => Some(l),
            RemoteLatencyRow::RoundTrip(_) => None,
        })
        .collect();
    let raw = rows.iter().find(|(s, _)| *s == "raw-tcp").map(|(_, r)| r);
    let (x0, x1) = volley
        .iter()
        .map(|r| r.achieved_per_sec)
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let mut lines = Vec::new();
    for (percentile, label, k) in [(0, "p50", 1.0), (1, "p99", 0.7), (2, "p99.9", 0.45)] {
        let micros = |percentiles: [u64; 3]| percentiles[percentile] as f64 / 1e3;
        // Open-loop runs form the line; the one-in-flight run is a lone
        // point at its achieved rate.
        let points = |open: bool| -> Vec<(f64, f64)> {
            let mut points: Vec<(f64, f64)> = volley
                .iter()
                .filter(|r| r.offered_per_sec.is_some() == open)
                .map(|r| (r.achieved_per_sec, micros(r.percentiles())))
                .collect();
            if open {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            points
        };
        lines.push(Line {
            name: format!("volley ask {label}, open loop"),
            points: points(true),
            dashed: false,
            color: shade(color("volley"), k),
        });
        lines.push(Line {
            name: format!("volley ask {label}, 1 in flight"),
            points: points(false),
            dashed: false,
            color: shade(color("kameo"), k),
        });
        if let Some(raw) = raw.filter(|_| x0 <= x1) {
            let v = micros(raw.percentiles());
            lines.push(Line {
                name: format!("raw TCP round trip {label}"),
                points: vec![(x0, v), (x1, v)],
                dashed: true,
                color: shade(color("tokio"), k),
            });
        }
    }
    log_lines(
        path,
        &report.heading("remote-latency: ask round trip vs offered rate"),
        "requests/s (offered; one-in-flight run at its achieved rate)",
        "latency µs (log)",
        &lines,
    )
}

/// A row of a scenario whose one figure is a rate: what the bar is labelled
/// with after the system, and the rate.
pub trait ThroughputBar {
    fn what(&self) -> &str;
    fn msgs_per_sec(&self) -> f64;
}

impl ThroughputBar for RouterRow {
    fn what(&self) -> &str {
        &self.mode
    }
    fn msgs_per_sec(&self) -> f64 {
        self.msgs_per_sec
    }
}

impl ThroughputBar for RemoteTellRow {
    fn what(&self) -> &str {
        &self.sender
    }
    fn msgs_per_sec(&self) -> f64 {
        self.msgs_per_sec
    }
}

impl ThroughputBar for RemoteAskRow {
    fn what(&self) -> &str {
        &self.mode
    }
    fn msgs_per_sec(&self) -> f64 {
        self.msgs_per_sec
    }
}

/// One bar per row: `system` plus its mode or sender, M msgs/s.
pub fn throughput_bars<M: ThroughputBar>(report: &Report<M>, path: &Path) -> crate::Result<()> {
    let bars_ = measured(&report.rows)
        .map(|(system, r)| {
            let label = format!("{system} {}", r.what()).trim().to_string();
            (label, r.msgs_per_sec() / 1e6)
        })
        .collect();
    bars(
        path,
        &report.heading(&report.scenario),
        &[BarPanel {
            title: "throughput".into(),
            y_label: "M msgs/s".into(),
            bars: bars_,
        }],
    )
}

/// raw-tcp: frames/s one way, and the round trip's percentiles.
pub fn raw_tcp(report: &Report<RawTcpRow>, path: &Path) -> crate::Result<()> {
    let mut stream = Vec::new();
    let mut round_trip = Vec::new();
    for (system, row) in measured(&report.rows) {
        match row {
            RawTcpRow::Stream(s) => stream.push(("raw-tcp".to_string(), s.msgs_per_sec / 1e6)),
            RawTcpRow::RoundTrip(r) => {
                let who = if system.contains("blocking") {
                    "std"
                } else if system.contains("spinning") {
                    "spinning"
                } else {
                    "tokio"
                };
                round_trip.push((format!("{who} p50"), r.p50_ns as f64 / 1e3));
                round_trip.push((format!("{who} p99"), r.p99_ns as f64 / 1e3));
            }
        }
    }
    bars(
        path,
        &report.heading("raw-tcp on loopback"),
        &[
            BarPanel {
                title: "one-way frames".into(),
                y_label: "M frames/s".into(),
                bars: stream,
            },
            BarPanel {
                title: "ping-pong round trip".into(),
                y_label: "µs".into(),
                bars: round_trip,
            },
        ],
    )
}
