//! SVG charts with plotters (SVG backend only, no font files needed: text
//! is written as SVG `<text>` and its size estimated).

use std::path::Path;

use plotters::prelude::*;

/// One line of a line chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart panel (log-scaled x).
pub struct LinePanel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

/// A bar chart panel: one bar per system.
pub struct BarPanel {
    pub title: String,
    pub y_label: String,
    pub bars: Vec<(String, f64)>,
}

/// A fixed colour per system, so charts are comparable.
pub fn color(system: &str) -> RGBColor {
    // "volley (mode)" is volley's colour.
    match system.split(' ').next().unwrap_or(system) {
        "volley" => RGBColor(214, 39, 40),
        "tokio" => RGBColor(110, 110, 110),
        "actix" => RGBColor(31, 119, 180),
        "ractor" => RGBColor(44, 160, 44),
        "kameo" => RGBColor(255, 127, 14),
        "pekko" => RGBColor(148, 103, 189),
        _ => RGBColor(23, 190, 207),
    }
}

fn err(e: impl std::fmt::Display) -> crate::Error {
    format!("chart: {e}").into()
}

/// An axis label with as many decimals as the axis range needs.
fn fmt_value(v: f64, max: f64) -> String {
    if max >= 20.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Line panels side by side under a title.
pub fn lines(path: &Path, title: &str, panels: &[LinePanel]) -> crate::Result<()> {
    let width = 620 * panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (width, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let all = panel.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
        for &(x, y) in all {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1) = (1.0, 2.0);
        }
        if x0 == x1 {
            x1 = x0 * 2.0;
        }
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(
                (x0.max(0.5) * 0.8..x1 * 1.25).log_scale(),
                0.0..y1 * 1.1 + 1.0,
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(&panel.x_label)
            .y_desc(&panel.y_label)
            .max_light_lines(2)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| fmt_value(*y, y1))
            .draw()
            .map_err(err)?;
        for s in &panel.series {
            if s.points.is_empty() {
                continue;
            }
            let c = color(&s.name);
            chart
                .draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2)))
                .map_err(err)?
                .label(&s.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Bar panels side by side under a title.
pub fn bars(path: &Path, title: &str, panels: &[BarPanel]) -> crate::Result<()> {
    let width = 460 * panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (width, 400)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let n = panel.bars.len().max(1);
        let ymax = panel.bars.iter().map(|b| b.1).fold(0.0, f64::max) * 1.15 + 1e-9;
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..ymax)
            .map_err(err)?;
        let names: Vec<String> = panel.bars.iter().map(|b| b.0.clone()).collect();
        let label = move |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                names.get(*i).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(2)
            .y_label_formatter(&|y| fmt_value(*y, ymax))
            .x_labels(n)
            .x_label_formatter(&label)
            .y_desc(&panel.y_label)
            .draw()
            .map_err(err)?;
        chart
            .draw_series(panel.bars.iter().enumerate().map(|(i, (name, v))| {
                let coords: [(SegmentValue<usize>, f64); 2] = [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), *v),
                ];
                let mut r = Rectangle::new(coords, color(name).filled());
                r.set_margin(0, 0, 8, 8);
                r
            }))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_svg_files() {
        let dir = std::env::temp_dir().join(format!("volley-bench-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = dir.join("l.svg");
        lines(
            &line,
            "t",
            &[LinePanel {
                title: "p".into(),
                x_label: "x".into(),
                y_label: "y".into(),
                series: vec![
                    Series {
                        name: "volley".into(),
                        points: vec![(1.0, 3.0), (50.0, 9.0)],
                    },
                    Series {
                        name: "tokio".into(),
                        points: vec![],
                    },
                ],
            }],
        )
        .unwrap();
        let svg = std::fs::read_to_string(&line).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("volley"), "{svg}");
        let bar = dir.join("b.svg");
        bars(
            &bar,
            "t",
            &[BarPanel {
                title: "p".into(),
                y_label: "ns".into(),
                bars: vec![("volley".into(), 2.0), ("actix".into(), 5.0)],
            }],
        )
        .unwrap();
        assert!(std::fs::read_to_string(&bar).unwrap().contains("actix"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
