//! Results: rows of metrics per system, a readable table, the JSON object
//! and the machine description.
//!
//! The JSON object is a contract that scripts read, so every scenario's row
//! is a typed struct in [`rows`] whose serialized fields (names, order,
//! number types) are that contract; [`Row`] adds the `system` in front, or
//! says why a system was skipped. The table is a view of the same JSON: its
//! columns name JSON keys.

pub mod cluster_rows;
pub mod failover_rows;
pub mod grpc_rows;
pub mod remote_rows;
pub mod rows;
pub mod web_rows;

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Map, Value};

/// How a column's values are printed in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// As is (strings, integers); `-` when missing or null.
    Plain,
    /// Divided by 10^6, one decimal (msgs/s → M msgs/s).
    Millions,
    /// Nanoseconds shown as µs with two decimals.
    Micros,
    /// Nanoseconds shown as ms with one decimal.
    Millis,
    /// A float with no decimals.
    Round,
}

/// A table column: the JSON key it shows, its header and its format.
#[derive(Debug, Clone)]
pub struct Column {
    pub key: &'static str,
    pub header: &'static str,
    pub fmt: Fmt,
}

/// Shorthand for a [`Column`].
pub const fn col(key: &'static str, header: &'static str, fmt: Fmt) -> Column {
    Column { key, header, fmt }
}

/// The machine the numbers come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
}

impl Machine {
    /// This machine: available cores and `/proc/cpuinfo`'s model name.
    pub fn detect() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| cpu_model(&text))
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        Machine { cores, cpu }
    }
}

/// The first `model name` in `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// How a figure fares against its target, in the notes.
pub fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

/// The 1-minute load average, for the table header.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = text.split_whitespace();
    Some(format!("{} {} {}", it.next()?, it.next()?, it.next()?))
}

/// One result row: `{"system": "...", metrics...}` or
/// `{"system": "...", "skipped": "reason"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row<M> {
    pub system: String,
    #[serde(flatten)]
    pub outcome: Outcome<M>,
}

/// What a [`Row`] holds after its `system`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Outcome<M> {
    /// Measured here (volley, raw TCP): the JSON is `M`'s fields.
    Measured(M),
    /// Reported by a peer harness.
    Reported(Reported<M>),
    Skipped {
        skipped: String,
    },
}

/// A peer's result line: read as `M`, printed as the harness printed it.
///
/// The JSON keeps the line's fields (any the row type does not know
/// included) in the order the driver has always printed them: `scenario`
/// and `system` are taken out of the harness's object with serde_json's
/// `remove`, which (with `preserve_order`) moves the last field into the
/// removed one's place, so the last two fields come first.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported<M> {
    pub metrics: M,
    pub printed: Map<String, Value>,
}

impl<M> Serialize for Reported<M> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.printed.serialize(serializer)
    }
}

impl<M> Row<M> {
    /// A row of what `system` measured.
    pub fn measured(system: &str, metrics: M) -> Self {
        Row {
            system: system.to_string(),
            outcome: Outcome::Measured(metrics),
        }
    }

    /// A row of what a peer harness reported for `system`.
    pub fn reported(system: &str, reported: Reported<M>) -> Self {
        Row {
            system: system.to_string(),
            outcome: Outcome::Reported(reported),
        }
    }

    /// A row saying why `system` did not run.
    pub fn skipped(system: &str, reason: &str) -> Self {
        Row {
            system: system.to_string(),
            outcome: Outcome::Skipped {
                skipped: reason.to_string(),
            },
        }
    }

    /// What was measured; `None` for a skipped system.
    pub fn metrics(&self) -> Option<&M> {
        match &self.outcome {
            Outcome::Measured(m) => Some(m),
            Outcome::Reported(r) => Some(&r.metrics),
            Outcome::Skipped { .. } => None,
        }
    }

    pub fn is_skipped(&self) -> bool {
        self.metrics().is_none()
    }
}

/// The measured rows as (system, metrics), skipped ones left out.
pub fn measured<M>(rows: &[Row<M>]) -> impl Iterator<Item = (&str, &M)> {
    rows.iter()
        .filter_map(|r| Some((r.system.as_str(), r.metrics()?)))
}

/// A scenario's row type: its JSON fields (by `Serialize`) and the table
/// columns that show them.
pub trait Metrics: Serialize {
    /// Table columns after `system`.
    fn columns() -> Vec<Column>;
}

/// Draws a report as an SVG chart.
pub type ChartFn<M> = fn(&Report<M>, &Path) -> crate::Result<()>;

/// A scenario's results.
#[derive(Debug, Clone)]
pub struct Report<M> {
    pub scenario: String,
    pub machine: Machine,
    pub rows: Vec<Row<M>>,
    /// Lines printed under the table (comparisons, targets); not in the JSON.
    pub notes: Vec<String>,
    chart: ChartFn<M>,
}

/// What `main` does with a scenario's results, whatever their row type.
pub trait Results {
    /// The readable table, with a header naming the machine and the notes.
    fn table(&self) -> String;
    /// The JSON object: `{"scenario", "machine": {"cores", "cpu"}, "rows"}`.
    fn to_json(&self) -> Value;
    /// Writes the scenario's chart (SVG) to `path`.
    fn write_chart(&self, path: &Path) -> crate::Result<()>;
}

impl<M> Report<M> {
    pub fn new(scenario: &str, chart: ChartFn<M>) -> Self {
        Report {
            scenario: scenario.to_string(),
            machine: Machine::detect(),
            rows: Vec::new(),
            notes: Vec::new(),
            chart,
        }
    }

    /// "`what` — N cores, CPU": the heading of charts.
    pub fn heading(&self, what: &str) -> String {
        format!(
            "{what} — {} cores, {}",
            self.machine.cores, self.machine.cpu
        )
    }
}

impl<M: Metrics> Results for Report<M> {
    fn to_json(&self) -> Value {
        json!({
            "scenario": self.scenario,
            "machine": {"cores": self.machine.cores, "cpu": self.machine.cpu},
            "rows": self.rows,
        })
    }

    fn write_chart(&self, path: &Path) -> crate::Result<()> {
        (self.chart)(self, path)
    }

    fn table(&self) -> String {
        let columns = M::columns();
        let mut headers = vec!["system".to_string()];
        headers.extend(columns.iter().map(|c| c.header.to_string()));
        let mut lines: Vec<Vec<String>> = Vec::new();
        for row in &self.rows {
            let fields = match serde_json::to_value(row) {
                Ok(Value::Object(fields)) => fields,
                _ => Map::new(),
            };
            let mut cells = vec![text(fields.get("system"))];
            if let Some(reason) = fields.get("skipped") {
                cells.push(format!("skipped: {}", text(Some(reason))));
            } else {
                cells.extend(columns.iter().map(|c| cell(fields.get(c.key), c.fmt)));
            }
            lines.push(cells);
        }
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for line in &lines {
            // A `skipped` cell may run across the columns after it.
            if line.len() == headers.len() {
                for (w, c) in widths.iter_mut().zip(line) {
                    *w = (*w).max(c.chars().count());
                }
            } else {
                widths[0] = widths[0].max(line[0].chars().count());
            }
        }
        let fmt_line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let w = widths.get(i).copied().unwrap_or(0);
                if i == 0 {
                    s.push_str(&format!("{c:<w$}"));
                } else if cells.len() == headers.len() {
                    s.push_str(&format!("  {c:>w$}"));
                } else {
                    s.push_str(&format!("  {c}"));
                }
            }
            s.trim_end().to_string()
        };
        let mut out = format!(
            "{} — {} cores, {}{}\n",
            self.scenario,
            self.machine.cores,
            self.machine.cpu,
            load_average()
                .map(|l| format!(", load {l}"))
                .unwrap_or_default()
        );
        out.push_str(&fmt_line(&headers));
        out.push('\n');
        let rule: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
        out.push_str(&"-".repeat(rule));
        out.push('\n');
        for line in &lines {
            out.push_str(&fmt_line(line));
            out.push('\n');
        }
        for note in &self.notes {
            out.push_str(note);
            out.push('\n');
        }
        out.trim_end().to_string()
    }
}

fn text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn cell(v: Option<&Value>, fmt: Fmt) -> String {
    let Some(x) = v.and_then(Value::as_f64) else {
        return text(v);
    };
    match fmt {
        Fmt::Plain => text(v),
        Fmt::Millions => format!("{:.1}", x / 1e6),
        Fmt::Micros => format!("{:.2}", x / 1e3),
        Fmt::Millis => format!("{:.1}", x / 1e6),
        Fmt::Round => format!("{x:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Sample {
        pairs: u64,
        msgs_per_sec: f64,
    }

    impl Metrics for Sample {
        fn columns() -> Vec<Column> {
            vec![
                col("pairs", "P", Fmt::Plain),
                col("msgs_per_sec", "M msgs/s", Fmt::Millions),
            ]
        }
    }

    fn sample() -> Report<Sample> {
        let mut r = Report::new("local-pingpong", |_, _| Ok(()));
        r.rows.push(Row::measured(
            "volley",
            Sample {
                pairs: 4,
                msgs_per_sec: 150_000_000.0,
            },
        ));
        r.rows.push(Row::skipped("pekko", "java not found"));
        r
    }

    #[test]
    fn json_has_the_contract_shape() {
        let v = sample().to_json();
        let obj = v.as_object().unwrap();
        assert_eq!(
            obj.keys().collect::<Vec<_>>(),
            vec!["scenario", "machine", "rows"]
        );
        assert_eq!(v["scenario"], "local-pingpong");
        assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
        assert!(v["machine"]["cpu"].is_string());
        assert_eq!(
            v["rows"].to_string(),
            r#"[{"system":"volley","pairs":4,"msgs_per_sec":150000000.0},{"system":"pekko","skipped":"java not found"}]"#
        );
        // One line, parseable back.
        let line = v.to_string();
        assert!(!line.contains('\n'));
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn table_is_readable() {
        let t = sample().table();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("local-pingpong — "), "{t}");
        assert_eq!(lines[1], "system  P  M msgs/s", "{t}");
        assert_eq!(lines[2], "-".repeat(19), "{t}");
        assert_eq!(lines[3], "volley  4     150.0", "{t}");
        assert_eq!(lines[4], "pekko   skipped: java not found", "{t}");
    }

    #[test]
    fn rows_tell_measured_from_skipped() {
        let r = sample();
        assert_eq!(r.rows[0].metrics().map(|m| m.pairs), Some(4));
        assert!(r.rows[1].is_skipped());
        let systems: Vec<&str> = measured(&r.rows).map(|(s, _)| s).collect();
        assert_eq!(systems, ["volley"]);
    }

    #[test]
    fn cpu_model_from_cpuinfo() {
        let text = "processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\n";
        assert_eq!(cpu_model(text).as_deref(), Some("Some CPU @ 2.0GHz"));
        assert_eq!(cpu_model("nothing"), None);
    }
}
