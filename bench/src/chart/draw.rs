//! The chart shapes the scenarios use, drawn with plotters' SVG backend:
//! line panels side by side, one log-log line chart, bar panels side by
//! side.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;

/// One line of a line chart; `dashed` for reference figures not measured
/// in this run (drawn without point markers).
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    pub color: RGBColor,
}

impl Line {
    /// A measured line in `system`'s colour.
    pub fn of_system(system: &str, points: Vec<(f64, f64)>) -> Self {
        Line {
            name: system.to_string(),
            points,
            dashed: false,
            color: super::color(system),
        }
    }
}

/// A line chart panel (log-scaled x, linear y from zero).
pub struct LinePanel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
}

/// A bar chart panel: one bar per (label, value).
pub struct BarPanel {
    pub title: String,
    pub y_label: String,
    pub bars: Vec<(String, f64)>,
}

/// An axis label with as many decimals as the axis range needs.
fn fmt_value(v: f64, max: f64) -> String {
    if max >= 20.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The smallest and largest x and y over the lines' points, as
/// `(x0, x1, y0, y1)`; `None` without points.
fn extent(lines: &[Line]) -> Option<(f64, f64, f64, f64)> {
    let mut points = lines.iter().flat_map(|l| l.points.iter()).peekable();
    points.peek()?;
    Some(points.fold(
        (f64::MAX, f64::MIN, f64::MAX, f64::MIN),
        |(x0, x1, y0, y1), &(x, y)| (x0.min(x), x1.max(x), y0.min(y), y1.max(y)),
    ))
}

/// A white SVG canvas of `size` under `title`.
fn canvas<'a>(
    path: &'a Path,
    size: (u32, u32),
    title: Option<&str>,
) -> crate::Result<DrawingArea<SVGBackend<'a>, Shift>> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    match title {
        Some(title) => root.titled(title, ("sans-serif", 20)).map_err(err),
        None => Ok(root),
    }
}

/// Draws `lines` (points marked unless dashed) and their legend.
fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    lines: &[Line],
) -> crate::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for l in lines.iter().filter(|l| !l.points.is_empty()) {
        let color = l.color;
        let style = color.stroke_width(2);
        if l.dashed {
            chart
                .draw_series(DashedLineSeries::new(l.points.clone(), 6, 4, style))
                .map_err(err)?
                .label(&l.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(2))
                });
        } else {
            chart
                .draw_series(LineSeries::new(l.points.clone(), style))
                .map_err(err)?
                .label(&l.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(l.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Line panels side by side under a title.
pub fn lines(path: &Path, title: &str, panels: &[LinePanel]) -> crate::Result<()> {
    let width = 620 * panels.len().max(1) as u32;
    let root = canvas(path, (width, 460), Some(title))?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let (mut x0, mut x1, y1) = match extent(&panel.lines) {
            Some((x0, x1, _, y1)) => (x0, x1, y1.max(0.0)),
            None => (1.0, 2.0, 0.0),
        };
        if x0 == x1 {
            x1 = x0 * 2.0;
        }
        x0 = x0.max(0.5);
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), 0.0..y1 * 1.1 + 1.0)
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
        draw_lines(&mut chart, &panel.lines)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// One line chart with log-scaled x and y (for values spanning decades).
pub fn log_lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
) -> crate::Result<()> {
    let root = canvas(path, (900, 560), None)?;
    let (x0, x1, y0, y1) = extent(lines).unwrap_or((1.0, 10.0, 1.0, 10.0));
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(
            (x0.max(1e-9) * 0.8..x1 * 1.25).log_scale(),
            (y0.max(1e-9) * 0.6..y1 * 1.8).log_scale(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
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
    draw_lines(&mut chart, lines)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Bar panels side by side under a title.
pub fn bars(path: &Path, title: &str, panels: &[BarPanel]) -> crate::Result<()> {
    let width = 460 * panels.len().max(1) as u32;
    let root = canvas(path, (width, 400), Some(title))?;
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
                let mut r = Rectangle::new(coords, super::color(name).filled());
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
                lines: vec![
                    Line::of_system("volley", vec![(1.0, 3.0), (50.0, 9.0)]),
                    Line::of_system("tokio", vec![]),
                ],
            }],
        )
        .unwrap();
        let svg = std::fs::read_to_string(&line).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("volley"), "{svg}");
        assert!(!svg.contains("tokio"), "an empty line has no legend: {svg}");
        let log = dir.join("log.svg");
        let reference = Line {
            name: "seed".into(),
            points: vec![(1.0, 10.0), (10.0, 1000.0)],
            dashed: true,
            color: RGBColor(1, 2, 3),
        };
        log_lines(&log, "t", "x", "y", &[reference]).unwrap();
        assert!(std::fs::read_to_string(&log).unwrap().contains("seed"));
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

    #[test]
    fn extent_spans_every_point() {
        let ls = [
            Line::of_system("a", vec![(2.0, 5.0), (8.0, 1.0)]),
            Line::of_system("b", vec![(4.0, 9.0)]),
        ];
        assert_eq!(extent(&ls), Some((2.0, 8.0, 1.0, 9.0)));
        assert_eq!(extent(&[Line::of_system("a", vec![])]), None);
    }
}
