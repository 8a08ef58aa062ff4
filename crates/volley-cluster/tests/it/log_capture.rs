//! A minimal `tracing` subscriber for the whole test process: keeps every
//! event at INFO and above, so a test can check that a refusal was logged,
//! and in a node process (`processes`) also writes each to stderr, where
//! the test collects it for its failure messages.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

static EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static INSTALLED: OnceLock<()> = OnceLock::new();
static TO_STDERR: AtomicBool = AtomicBool::new(false);

/// More than any test logs; past it the oldest half is forgotten, so a
/// flood test does not grow the test's own memory.
const KEPT: usize = 20_000;

/// Installs the subscriber for the process (idempotent).
pub fn install() {
    INSTALLED.get_or_init(|| {
        // Another test binary module may have installed one first: then
        // this one's checks see nothing and say so.
        let _ = tracing::subscriber::set_global_default(Capture);
    });
}

/// Installs it and echoes every event to stderr.
pub fn install_to_stderr() {
    TO_STDERR.store(true, Ordering::Relaxed);
    install();
}

/// The lines logged so far that contain `needle`.
pub fn lines_with(needle: &str) -> Vec<String> {
    EVENTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|l| l.contains(needle))
        .cloned()
        .collect()
}

struct Capture;

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::INFO
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = format!("{} {}:", meta.level(), meta.target());
        event.record(&mut Text(&mut line));
        if TO_STDERR.load(Ordering::Relaxed) {
            eprintln!("{line}");
        }
        let mut events = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
        if events.len() >= KEPT {
            events.drain(..KEPT / 2);
        }
        events.push(line);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
