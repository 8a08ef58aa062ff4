//! Small measurement helpers shared by the scenarios.

use std::time::{Duration, Instant};

use crate::report::{num, Row};

/// The row whose `key` is the median of the rows' values (the lower middle
/// for an even count). Rows without the key are ignored.
pub fn median_row(rows: &[Row], key: &str) -> Option<Row> {
    let mut with: Vec<(f64, &Row)> = rows
        .iter()
        .filter_map(|r| num(r, key).map(|v| (v, r)))
        .collect();
    with.sort_by(|a, b| a.0.total_cmp(&b.0));
    with.get((with.len().max(1) - 1) / 2)
        .map(|(_, r)| (*r).clone())
}

/// The median of some values (the lower middle for an even count).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[(values.len() - 1) / 2]
}

/// Resident memory of this process in bytes (VmRSS), if readable.
pub fn vm_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

/// VmRSS from `/proc/<pid>/status` text, in bytes.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Waits until `cond` holds, polling; an error after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, cond: impl Fn() -> bool) -> crate::Result<()> {
    let deadline = Instant::now() + timeout;
    let mut spins = 0u32;
    while !cond() {
        if Instant::now() > deadline {
            return Err(format!("timed out after {timeout:?} waiting for {what}").into());
        }
        spins += 1;
        if spins < 100 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn median_of_rows_and_values() {
        let rows: Vec<Row> = [3.0, 1.0, 2.0]
            .iter()
            .map(|v| crate::report::row("x", json!({ "v": v })))
            .collect();
        assert_eq!(num(&median_row(&rows, "v").unwrap(), "v"), Some(2.0));
        assert!(median_row(&[], "v").is_none());
        assert_eq!(median(&mut [5.0, 1.0, 4.0, 2.0]), 2.0);
    }

    #[test]
    fn vm_rss_parses() {
        let status = "Name:\tx\nVmRSS:\t  1234 kB\nVmSwap:\t0 kB\n";
        assert_eq!(parse_vm_rss(status), Some(1234 * 1024));
        assert!(vm_rss_bytes().unwrap() > 0);
    }
}
