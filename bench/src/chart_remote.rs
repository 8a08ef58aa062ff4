//! Charts of the remote scenarios: remote-pingpong msgs/s against clients
//! (with Akka.NET's published figures as dashed reference lines),
//! remote-latency percentiles against offered rate, and bars for the
//! single-figure scenarios. Uses [`crate::chart`]'s colours and bar panels.

use std::path::Path;

use plotters::prelude::*;

use crate::chart::{self, BarPanel};
use crate::report::{num, Report, Row};

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

fn err(e: impl std::fmt::Display) -> crate::Error {
    format!("chart: {e}").into()
}

/// A line of a chart; `dashed` for reference figures not measured here.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    pub color: RGBColor,
}

fn live(report: &Report) -> Vec<&Row> {
    report
        .rows
        .iter()
        .filter(|r| !r.contains_key("skipped"))
        .collect()
}

fn system(r: &Row) -> String {
    r.get("system")
        .and_then(|s| s.as_str())
        .unwrap_or("?")
        .to_string()
}

/// A line chart with log-scaled x and y (values span decades here).
pub fn log_lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
) -> crate::Result<()> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let pts = lines.iter().flat_map(|l| l.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (1.0, 10.0, 1.0, 10.0);
    }
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(
            (x0.max(1e-9) * 0.8..x1 * 1.25).log_scale(),
            (y0.max(1e-9) * 0.6..y1 * 1.8).log_scale(),
        )
        .map_err(err)?;
    c.configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .max_light_lines(2)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| {
            if *y >= 1e6 {
                format!("{:.1}M", y / 1e6)
            } else if *y >= 1e3 {
                format!("{:.0}K", y / 1e3)
            } else {
                format!("{y:.1}")
            }
        })
        .draw()
        .map_err(err)?;
    for l in lines.iter().filter(|l| !l.points.is_empty()) {
        let color = l.color;
        let style = color.stroke_width(2);
        if l.dashed {
            c.draw_series(DashedLineSeries::new(l.points.clone(), 6, 4, style))
                .map_err(err)?
                .label(&l.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(2))
                });
        } else {
            c.draw_series(LineSeries::new(l.points.clone(), style))
                .map_err(err)?
                .label(&l.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            c.draw_series(l.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
        }
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Variants of one system get darker/lighter shades of its colour.
fn shade(c: RGBColor, k: f64) -> RGBColor {
    let f = |v: u8| ((v as f64) * k).clamp(0.0, 255.0) as u8;
    RGBColor(f(c.0), f(c.1), f(c.2))
}

/// remote-pingpong: msgs/s against clients, one line per system, plus the
/// seed's Akka.NET figures.
pub fn pingpong(report: &Report, path: &Path) -> crate::Result<()> {
    let rows = live(report);
    let mut names: Vec<String> = Vec::new();
    for r in &rows {
        let s = system(r);
        if !names.contains(&s) {
            names.push(s);
        }
    }
    let mut lines: Vec<Line> = names
        .iter()
        .map(|s| {
            let mut points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| &system(r) == s)
                .filter_map(|r| Some((num(r, "clients")?, num(r, "msgs_per_sec")?)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let base = chart::color(s);
            Line {
                name: s.clone(),
                points,
                dashed: false,
                color: if s.contains("unbatched") {
                    shade(base, 0.55)
                } else {
                    base
                },
            }
        })
        .collect();
    lines.push(Line {
        name: "Akka.NET 1.4.14 batched (seed)".into(),
        points: AKKA_NET_BATCHED.to_vec(),
        dashed: true,
        color: RGBColor(23, 190, 207),
    });
    lines.push(Line {
        name: "Akka.NET 1.4.14 unbatched (seed)".into(),
        points: AKKA_NET_UNBATCHED.to_vec(),
        dashed: true,
        color: RGBColor(120, 120, 120),
    });
    log_lines(
        path,
        &format!(
            "remote-pingpong (50 in flight per client) — {} cores, {}",
            report.machine.cores, report.machine.cpu
        ),
        "clients",
        "msgs/s (log)",
        &lines,
    )
}

/// remote-latency: p50/p99/p99.9 against the rate (the one-in-flight run
/// at its achieved rate), raw TCP's round trip as dashed levels.
pub fn latency(report: &Report, path: &Path) -> crate::Result<()> {
    let rows = live(report);
    let volley: Vec<&&Row> = rows.iter().filter(|r| system(r) == "volley").collect();
    let raw = rows.iter().find(|r| system(r) == "raw-tcp");
    let mut lines = Vec::new();
    let (x0, x1) = volley
        .iter()
        .filter_map(|r| num(r, "achieved_per_sec"))
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    for (key, label, k) in [
        ("p50_ns", "p50", 1.0),
        ("p99_ns", "p99", 0.7),
        ("p999_ns", "p99.9", 0.45),
    ] {
        // Open-loop runs form the line; the one-in-flight run is a lone
        // point at its achieved rate.
        let point = |r: &&&Row| Some((num(r, "achieved_per_sec")?, num(r, key)? / 1e3));
        let mut points: Vec<(f64, f64)> = volley
            .iter()
            .filter(|r| num(r, "offered_per_sec").is_some())
            .filter_map(point)
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        lines.push(Line {
            name: format!("volley ask {label}, open loop"),
            points,
            dashed: false,
            color: shade(chart::color("volley"), k),
        });
        lines.push(Line {
            name: format!("volley ask {label}, 1 in flight"),
            points: volley
                .iter()
                .filter(|r| num(r, "offered_per_sec").is_none())
                .filter_map(point)
                .collect(),
            dashed: false,
            color: shade(chart::color("kameo"), k),
        });
        if let Some(v) = raw.and_then(|r| num(r, key)) {
            if x0 <= x1 {
                lines.push(Line {
                    name: format!("raw TCP round trip {label}"),
                    points: vec![(x0, v / 1e3), (x1, v / 1e3)],
                    dashed: true,
                    color: shade(chart::color("tokio"), k),
                });
            }
        }
    }
    log_lines(
        path,
        &format!(
            "remote-latency: ask round trip vs offered rate — {} cores, {}",
            report.machine.cores, report.machine.cpu
        ),
        "requests/s (offered; one-in-flight run at its achieved rate)",
        "latency µs (log)",
        &lines,
    )
}

/// One bar per row: `system` plus its mode/senders/in-flight, msgs/s.
pub fn throughput_bars(report: &Report, path: &Path) -> crate::Result<()> {
    let bars = live(report)
        .iter()
        .filter_map(|r| {
            let what = ["mode", "sender", "senders", "inflight"]
                .iter()
                .find_map(|k| r.get(*k).map(|v| format!("{k}={v}")))
                .map(|w| {
                    w.replace('"', "")
                        .replace("mode=", "")
                        .replace("sender=", "")
                })
                .unwrap_or_default();
            Some((
                format!("{} {what}", system(r)).trim().to_string(),
                num(r, "msgs_per_sec")? / 1e6,
            ))
        })
        .collect();
    chart::bars(
        path,
        &format!(
            "{} — {} cores, {}",
            report.scenario, report.machine.cores, report.machine.cpu
        ),
        &[BarPanel {
            title: "throughput".into(),
            y_label: "M msgs/s".into(),
            bars,
        }],
    )
}

/// raw-tcp: frames/s one way, and the round trip's percentiles.
pub fn raw_tcp(report: &Report, path: &Path) -> crate::Result<()> {
    let rows = live(report);
    let stream: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| num(r, "p50_ns").is_none())
        .filter_map(|r| Some(("raw-tcp".to_string(), num(r, "msgs_per_sec")? / 1e6)))
        .collect();
    let rtt: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| num(r, "p50_ns").is_some())
        .flat_map(|r| {
            let who = if system(r).contains("blocking") {
                "std"
            } else {
                "tokio"
            };
            [("p50", "p50_ns"), ("p99", "p99_ns")]
                .iter()
                .filter_map(|(l, k)| Some((format!("{who} {l}"), num(r, k)? / 1e3)))
                .collect::<Vec<_>>()
        })
        .collect();
    chart::bars(
        path,
        &format!(
            "raw-tcp on loopback — {} cores, {}",
            report.machine.cores, report.machine.cpu
        ),
        &[
            BarPanel {
                title: "one-way frames".into(),
                y_label: "M frames/s".into(),
                bars: stream,
            },
            BarPanel {
                title: "ping-pong round trip".into(),
                y_label: "µs".into(),
                bars: rtt,
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::row;
    use serde_json::json;

    #[test]
    fn remote_charts_write_svg() {
        let dir = std::env::temp_dir().join(format!("volley-bench-rchart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = Report::new("remote-pingpong", vec![]);
        for (c, v) in [(1, 1e6), (10, 6e6)] {
            r.rows.push(row(
                "volley (batched)",
                json!({"clients": c, "msgs_per_sec": v}),
            ));
            r.rows.push(row(
                "pekko",
                json!({"clients": c, "msgs_per_sec": v / 30.0}),
            ));
        }
        let p = dir.join("pp.svg");
        pingpong(&r, &p).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.contains("Akka.NET") && svg.contains("pekko"), "{svg}");
        let mut l = Report::new("remote-latency", vec![]);
        l.rows.push(row(
            "volley",
            json!({"achieved_per_sec": 30000.0, "p50_ns": 30000, "p99_ns": 50000, "p999_ns": 90000}),
        ));
        l.rows.push(row(
            "volley",
            json!({"offered_per_sec": 10000, "achieved_per_sec": 10000.0, "p50_ns": 35000, "p99_ns": 70000, "p999_ns": 99000}),
        ));
        l.rows.push(row(
            "raw-tcp",
            json!({"p50_ns": 20000, "p99_ns": 30000, "p999_ns": 50000}),
        ));
        latency(&l, &dir.join("lat.svg")).unwrap();
        let mut t = Report::new("router", vec![]);
        t.rows
            .push(row("volley", json!({"mode": "pool", "msgs_per_sec": 5e7})));
        throughput_bars(&t, &dir.join("t.svg")).unwrap();
        let mut raw = Report::new("raw-tcp", vec![]);
        raw.rows.push(row("raw-tcp", json!({"msgs_per_sec": 5e7})));
        raw.rows.push(row(
            "raw-tcp",
            json!({"msgs_per_sec": 1e5, "p50_ns": 20000, "p99_ns": 30000}),
        ));
        raw_tcp(&raw, &dir.join("raw.svg")).unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}
