//! Keeps the warnings and errors the runtime logs, for tests that check a
//! failure was reported. Installs a process-wide `tracing` subscriber, so a
//! test binary that uses it sees every test's events: filter on something
//! unique to the test, such as its system's name.

use std::fmt::Write as _;
use std::sync::{Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::{span, Event, Level, Metadata, Subscriber};

/// One event: its level, then `name=value` for every field, message first.
#[derive(Debug, Clone)]
pub struct Logged {
    pub level: Level,
    pub text: String,
}

static LOGGED: Mutex<Vec<Logged>> = Mutex::new(Vec::new());

/// Starts keeping events (idempotent).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing::subscriber::set_global_default(WarningsAndErrors)
            .expect("no other global subscriber in this test binary");
    });
}

/// The events kept so far whose text contains every one of `parts`.
pub fn logged(parts: &[&str]) -> Vec<Logged> {
    let all = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    all.iter()
        .filter(|e| parts.iter().all(|p| e.text.contains(p)))
        .cloned()
        .collect()
}

struct WarningsAndErrors;

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl Subscriber for WarningsAndErrors {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::WARN
    }

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        let entry = Logged {
            level: *event.metadata().level(),
            text: fields.0,
        };
        LOGGED.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
    }

    // Spans are not kept.
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}
