//! A `metrics` recorder that keeps every counter, gauge and histogram in
//! memory, for tests that check what an actor system reports
//! (`[metrics] enabled`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

/// Every counter, gauge and histogram registered, by name and labels.
/// Install it once per test binary with [`RecordedMetrics::install`],
/// before creating the systems under test (they register their metrics
/// when they start).
#[derive(Default)]
pub struct RecordedMetrics {
    values: Mutex<HashMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<HashMap<String, Arc<Samples>>>,
}

/// A histogram's observations, every one kept (tests are short).
#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(value);
    }
}

/// `name{a=1,b=2}`, labels sorted by key.
fn series(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl RecordedMetrics {
    /// The process's global recorder, installed on first call. Panics if
    /// another recorder was installed first.
    pub fn install() -> &'static RecordedMetrics {
        static INSTALLED: OnceLock<&'static RecordedMetrics> = OnceLock::new();
        INSTALLED.get_or_init(|| {
            let recorder: &'static RecordedMetrics = Box::leak(Box::default());
            metrics::set_global_recorder(recorder)
                .expect("no other metrics recorder may be installed in this test binary");
            recorder
        })
    }

    fn cell(&self, key: &Key) -> Arc<AtomicU64> {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        values.entry(series(key)).or_default().clone()
    }

    /// A counter's value, by name and its labels as `k=v` joined with
    /// commas in key order (`"reason=no_routee,system=s"`).
    pub fn counter(&self, name: &str, labels: &str) -> Option<u64> {
        let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        values
            .get(&format!("{name}{{{labels}}}"))
            .map(|v| v.load(Ordering::SeqCst))
    }

    /// A gauge's value, addressed like [`Self::counter`].
    pub fn gauge(&self, name: &str, labels: &str) -> Option<f64> {
        self.counter(name, labels).map(f64::from_bits)
    }

    /// A histogram's observations so far, in the order recorded,
    /// addressed like [`Self::counter`].
    pub fn histogram(&self, name: &str, labels: &str) -> Option<Vec<f64>> {
        let histograms = self.histograms.lock().unwrap_or_else(|e| e.into_inner());
        histograms
            .get(&format!("{name}{{{labels}}}"))
            .map(|h| h.0.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Every series registered so far (histograms' included), as
    /// `name{labels}`.
    pub fn series(&self) -> Vec<String> {
        let mut all: Vec<String> = {
            let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
            values.keys().cloned().collect()
        };
        let histograms = self.histograms.lock().unwrap_or_else(|e| e.into_inner());
        all.extend(histograms.keys().cloned());
        all.sort();
        all
    }
}

impl Recorder for &'static RecordedMetrics {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        // `AtomicU64` keeps a gauge as its `f64`'s bits.
        Gauge::from_arc(self.cell(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut histograms = self.histograms.lock().unwrap_or_else(|e| e.into_inner());
        Histogram::from_arc(histograms.entry(series(key)).or_default().clone())
    }
}
