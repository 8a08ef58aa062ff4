//! How volley's side of every scenario is measured, written once: a
//! [`Workload`] is warmed up (which may also size its runs, see
//! [`Calibration`]), run `runs` times, each run becomes a result row, and
//! the median run is reported. Peers measure themselves; their rows go
//! through the same [`median_by`] (see `scenarios::Ctx::run_peer`).
//!
//! Also small helpers the workloads share: resident memory and polling
//! waits.

use std::time::{Duration, Instant};

/// What a throughput run yields: how many units it got through and how
/// long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    pub count: u64,
    pub elapsed: Duration,
}

impl Throughput {
    pub fn new(count: u64, elapsed: Duration) -> Self {
        Throughput { count, elapsed }
    }

    /// The elapsed time in whole nanoseconds (the rows' `elapsed_ns`).
    pub fn elapsed_ns(&self) -> u64 {
        self.elapsed.as_nanos() as u64
    }

    /// Units per second (the rows' `msgs_per_sec`).
    pub fn per_sec(&self) -> f64 {
        self.count as f64 / self.elapsed.as_secs_f64()
    }
}

/// Sizes measured runs from an unmeasured warm-up: as many units as the
/// warm-up's rate gets through in `seconds`, kept within `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    pub seconds: f64,
    pub min: f64,
    pub max: f64,
}

impl Calibration {
    /// The remote scenarios' sizing: runs of about 2 s (0.7 s with
    /// `--quick`).
    pub fn remote(quick: bool, min: f64, max: f64) -> Self {
        Calibration {
            seconds: if quick { 0.7 } else { 2.0 },
            min,
            max,
        }
    }

    /// The size of a measured run after a warm-up that did `warm_up`.
    pub fn size(&self, warm_up: Throughput) -> u64 {
        (warm_up.per_sec() * self.seconds).clamp(self.min, self.max) as u64
    }
}

/// One configuration of volley's side of a scenario (or of the raw-TCP
/// baseline): something that can be run at a given size, whose runs become
/// result rows and are ranked by one figure.
pub trait Workload {
    /// What one run yields: a [`Throughput`], a latency histogram, ...
    type Run;
    /// The result row of one run.
    type Row;

    /// One run of `size` units (messages, requests, round trips, actors).
    fn run(&mut self, size: u64) -> crate::Result<Self::Run>;

    /// The row reporting one measured run of `size`.
    fn row(&self, size: u64, run: Self::Run) -> Self::Row;

    /// The figure runs are ranked by (msgs/s, p50, ...).
    fn figure(row: &Self::Row) -> f64;

    /// The reported row from the measured runs' rows, in run order: by
    /// default the run with the median [`figure`](Self::figure).
    fn summarize(rows: Vec<Self::Row>) -> Self::Row {
        median_by(rows, Self::figure).expect("at least one measured run")
    }

    /// An unmeasured warm-up run of `warm_up` units; returns the size of
    /// the measured runs that `calibration` derives from its rate.
    fn calibrate(&mut self, warm_up: u64, calibration: &Calibration) -> crate::Result<u64>
    where
        Self: Workload<Run = Throughput>,
    {
        Ok(calibration.size(self.run(warm_up)?))
    }

    /// `runs` measured runs of `size`; the reported row.
    fn measure(&mut self, size: u64, runs: usize) -> crate::Result<Self::Row>
    where
        Self: Sized,
    {
        let mut rows = measure_interleaved(std::slice::from_mut(self), size, runs)?;
        Ok(rows.pop().expect("one workload, one row"))
    }
}

/// Measures several workloads run by run (the first run of each, then the
/// second of each, ...), so that a comparison between them is not skewed by
/// the machine getting busier or quieter; one reported row per workload.
pub fn measure_interleaved<W: Workload>(
    workloads: &mut [W],
    size: u64,
    runs: usize,
) -> crate::Result<Vec<W::Row>> {
    let runs = runs.max(1);
    let mut rows: Vec<Vec<W::Row>> = workloads.iter().map(|_| Vec::with_capacity(runs)).collect();
    for _ in 0..runs {
        for (workload, rows) in workloads.iter_mut().zip(&mut rows) {
            let run = workload.run(size)?;
            rows.push(workload.row(size, run));
        }
    }
    Ok(rows.into_iter().map(W::summarize).collect())
}

/// The item whose `figure` is the median (the lower middle for an even
/// count; equal figures keep their order). `None` when there are none.
pub fn median_by<T>(items: Vec<T>, figure: impl Fn(&T) -> f64) -> Option<T> {
    let mut ranked: Vec<(f64, T)> = items.into_iter().map(|t| (figure(&t), t)).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let middle = (ranked.len().max(1) - 1) / 2;
    ranked.into_iter().nth(middle).map(|(_, t)| t)
}

/// The median of some values (the lower middle for an even count).
pub fn median(values: &[f64]) -> f64 {
    median_by(values.to_vec(), |v| *v).expect("at least one value")
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

    #[test]
    fn median_is_the_lower_middle_and_keeps_the_whole_item() {
        let items = vec![("a", 3.0), ("b", 1.0), ("c", 2.0)];
        assert_eq!(median_by(items, |i| i.1), Some(("c", 2.0)));
        let even = vec![("a", 4.0), ("b", 1.0), ("c", 3.0), ("d", 2.0)];
        assert_eq!(median_by(even, |i| i.1), Some(("d", 2.0)));
        // Equal figures: the earlier item wins, as in run order.
        let ties = vec![("first", 1.0), ("second", 1.0)];
        assert_eq!(median_by(ties, |i| i.1), Some(("first", 1.0)));
        assert_eq!(median_by(Vec::<f64>::new(), |v| *v), None);
        assert_eq!(median(&[5.0, 1.0, 4.0, 2.0]), 2.0);
    }

    /// Runs yield the figures it was given, in order, and logs each run.
    struct Scripted {
        name: &'static str,
        figures: Vec<f64>,
        log: std::rc::Rc<std::cell::RefCell<Vec<(&'static str, u64)>>>,
    }

    impl Workload for Scripted {
        type Run = f64;
        type Row = (u64, f64);
        fn run(&mut self, size: u64) -> crate::Result<f64> {
            self.log.borrow_mut().push((self.name, size));
            Ok(self.figures.remove(0))
        }
        fn row(&self, size: u64, run: f64) -> (u64, f64) {
            (size, run)
        }
        fn figure(row: &(u64, f64)) -> f64 {
            row.1
        }
    }

    fn scripted(name: &'static str, figures: &[f64]) -> Scripted {
        Scripted {
            name,
            figures: figures.to_vec(),
            log: Default::default(),
        }
    }

    #[test]
    fn measure_repeats_and_reports_the_median_run() {
        let mut w = scripted("w", &[30.0, 10.0, 20.0]);
        assert_eq!(w.measure(7, 3).unwrap(), (7, 20.0));
        assert_eq!(w.log.borrow().len(), 3);
        // Zero runs still measure once.
        let mut once = scripted("once", &[5.0]);
        assert_eq!(once.measure(1, 0).unwrap(), (1, 5.0));
    }

    #[test]
    fn interleaved_runs_alternate_between_workloads() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut ws = [scripted("a", &[1.0, 3.0]), scripted("b", &[8.0, 6.0])];
        for w in &mut ws {
            w.log = log.clone();
        }
        let rows = measure_interleaved(&mut ws, 4, 2).unwrap();
        assert_eq!(rows, vec![(4, 1.0), (4, 6.0)]);
        assert_eq!(*log.borrow(), vec![("a", 4), ("b", 4), ("a", 4), ("b", 4)]);
    }

    #[test]
    fn a_failed_run_fails_the_measurement() {
        struct Failing;
        impl Workload for Failing {
            type Run = ();
            type Row = ();
            fn run(&mut self, _size: u64) -> crate::Result<()> {
                Err("broken".into())
            }
            fn row(&self, _size: u64, _run: ()) {}
            fn figure(_row: &()) -> f64 {
                0.0
            }
        }
        assert_eq!(Failing.measure(1, 3).unwrap_err().to_string(), "broken");
    }

    #[test]
    fn calibration_sizes_runs_from_the_warm_up_rate() {
        let cal = Calibration::remote(false, 100.0, 1e6);
        let warm = Throughput::new(1_000, Duration::from_millis(100));
        assert_eq!(warm.per_sec(), 10_000.0);
        assert_eq!(warm.elapsed_ns(), 100_000_000);
        assert_eq!(cal.size(warm), 20_000);
        assert_eq!(Calibration::remote(true, 100.0, 1e6).size(warm), 7_000);
        // Clamped both ways.
        assert_eq!(cal.size(Throughput::new(1, Duration::from_secs(1))), 100);
        assert_eq!(
            cal.size(Throughput::new(1 << 40, Duration::from_secs(1))),
            1_000_000
        );
    }

    #[test]
    fn vm_rss_parses() {
        let status = "Name:\tx\nVmRSS:\t  1234 kB\nVmSwap:\t0 kB\n";
        assert_eq!(parse_vm_rss(status), Some(1234 * 1024));
        assert!(vm_rss_bytes().unwrap() > 0);
    }
}
