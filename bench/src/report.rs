//! Results: rows of metrics per system, a readable table, the JSON object and
//! the machine description.

use serde_json::{json, Map, Value};

/// One result row: `{"system": "...", metrics...}` or
/// `{"system": "...", "skipped": "reason"}`. Keys keep their order.
pub type Row = Map<String, Value>;

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

/// A table column: the row key, its header and its format.
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

/// The 1-minute load average, for the table header.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = text.split_whitespace();
    Some(format!("{} {} {}", it.next()?, it.next()?, it.next()?))
}

/// A scenario's results.
#[derive(Debug, Clone)]
pub struct Report {
    pub scenario: String,
    pub machine: Machine,
    pub rows: Vec<Row>,
    /// Table columns after `system`.
    pub columns: Vec<Column>,
    /// Lines printed under the table (comparisons, targets); not in the JSON.
    pub notes: Vec<String>,
}

impl Report {
    pub fn new(scenario: &str, columns: Vec<Column>) -> Self {
        Report {
            scenario: scenario.to_string(),
            machine: Machine::detect(),
            rows: Vec::new(),
            columns,
            notes: Vec::new(),
        }
    }

    /// The JSON object: `{"scenario", "machine": {"cores", "cpu"}, "rows"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "scenario": self.scenario,
            "machine": {"cores": self.machine.cores, "cpu": self.machine.cpu},
            "rows": self.rows,
        })
    }

    /// The readable table, with a header naming the machine and the notes.
    pub fn table(&self) -> String {
        let mut headers = vec!["system".to_string()];
        headers.extend(self.columns.iter().map(|c| c.header.to_string()));
        let mut lines: Vec<Vec<String>> = Vec::new();
        for row in &self.rows {
            let mut cells = vec![text(row.get("system"))];
            if let Some(reason) = row.get("skipped") {
                cells.push(format!("skipped: {}", text(Some(reason))));
            } else {
                cells.extend(self.columns.iter().map(|c| cell(row.get(c.key), c.fmt)));
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

/// A row for `system` with the given fields.
pub fn row(system: &str, fields: Value) -> Row {
    let mut r = Row::new();
    r.insert("system".into(), system.into());
    if let Value::Object(map) = fields {
        r.extend(map);
    }
    r
}

/// A row saying why `system` did not run.
pub fn skipped(system: &str, reason: &str) -> Row {
    row(system, json!({ "skipped": reason }))
}

/// A numeric field of a row.
pub fn num(r: &Row, key: &str) -> Option<f64> {
    r.get(key).and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut r = Report::new(
            "local-pingpong",
            vec![
                col("pairs", "P", Fmt::Plain),
                col("msgs_per_sec", "M msgs/s", Fmt::Millions),
            ],
        );
        r.rows.push(row(
            "volley",
            json!({"pairs": 4, "msgs_per_sec": 150_000_000.0}),
        ));
        r.rows.push(skipped("pekko", "java not found"));
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
        assert_eq!(v["rows"][0]["system"], "volley");
        assert_eq!(v["rows"][0]["msgs_per_sec"], 150_000_000.0);
        assert_eq!(v["rows"][1]["skipped"], "java not found");
        // One line, parseable back.
        let line = v.to_string();
        assert!(!line.contains('\n'));
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn table_is_readable() {
        let t = sample().table();
        assert!(t.contains("M msgs/s"), "{t}");
        assert!(t.contains("150.0"), "{t}");
        assert!(t.contains("skipped: java not found"), "{t}");
    }

    #[test]
    fn cpu_model_from_cpuinfo() {
        let text = "processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\n";
        assert_eq!(cpu_model(text).as_deref(), Some("Some CPU @ 2.0GHz"));
        assert_eq!(cpu_model("nothing"), None);
    }
}
