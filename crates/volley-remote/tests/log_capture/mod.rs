//! Captures the log events of the whole test process, so that a test can
//! count warnings or wait for a transport event it cannot observe
//! otherwise. A minimal `tracing` subscriber: no spans, no output.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event: its level, and its message followed by its other fields.
#[derive(Debug, Clone)]
pub struct Captured {
    pub level: Level,
    pub text: String,
}

static EVENTS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());
static INSTALLED: OnceLock<()> = OnceLock::new();

/// Installs the capturing subscriber for the process (idempotent).
pub fn install() {
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(Capture).expect("no other global subscriber");
    });
}

/// The events so far that satisfy `keep`.
pub fn events(keep: impl Fn(&Captured) -> bool) -> Vec<Captured> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| keep(e))
        .cloned()
        .collect()
}

struct Capture;

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::DEBUG
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut text = String::new();
        event.record(&mut Text(&mut text));
        EVENTS.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            text,
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
