//! A minimal `tracing` subscriber for a whole test process, so that a test
//! can check that a refusal or a warning was logged, or wait for a
//! transport event it cannot observe otherwise. No spans, no formatting
//! beyond one line per event.
//!
//! The subscriber is global: a test binary that installs it sees every
//! test's events, so a test filters on something unique to it (its
//! system's name, its node's address). The first install of the process
//! ([`install`], [`install_at`] or [`install_to_stderr`]) fixes the level
//! kept; if another
//! global subscriber was set first, nothing is captured and the tests
//! that look for lines say so by failing.
//!
//! ```
//! use tracing::Level;
//! use volley_testkit::log_capture;
//!
//! log_capture::install_at(Level::INFO);
//! tracing::warn!(peer = "node-7", "handshake refused");
//! let refused = log_capture::events(|e| e.level == Level::WARN && e.text.contains("node-7"));
//! assert_eq!(refused[0].text, "handshake refused peer=node-7");
//! assert_eq!(log_capture::lines_with("node-7").len(), 1);
//! ```

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event: its level, its target, and its message followed by
/// ` name=value` for each other field.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The event's level.
    pub level: Level,
    /// The module that logged it.
    pub target: &'static str,
    /// The message, then its other fields.
    pub text: String,
}

impl Captured {
    /// `LEVEL target: text`, as [`lines_with`] returns it.
    pub fn line(&self) -> String {
        format!("{} {}: {}", self.level, self.target, self.text)
    }
}

static EVENTS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());
static INSTALLED: OnceLock<Level> = OnceLock::new();
static TO_STDERR: AtomicBool = AtomicBool::new(false);

/// More than any test binary logs at the levels its tests keep; past it
/// the oldest half is forgotten, so a flood test does not grow the test
/// process's memory without bound.
const KEPT: usize = 100_000;

/// Keeps every event at DEBUG and above from now on (idempotent).
pub fn install() {
    install_at(Level::DEBUG);
}

/// Keeps every event at `level` and above from now on (idempotent: the
/// first install's level stays).
pub fn install_at(level: Level) {
    INSTALLED.get_or_init(|| {
        // Another subscriber set first: then nothing is captured, and the
        // checks on captured lines fail, saying what they missed.
        let _ = tracing::subscriber::set_global_default(Capture { level });
        level
    });
}

/// [`install_at`], and also writes every kept event to stderr as a line,
/// for a child process whose stderr the test collects.
pub fn install_to_stderr(level: Level) {
    TO_STDERR.store(true, Ordering::Relaxed);
    install_at(level);
}

/// The events kept so far that satisfy `keep`, oldest first.
pub fn events(keep: impl Fn(&Captured) -> bool) -> Vec<Captured> {
    lock().iter().filter(|e| keep(e)).cloned().collect()
}

/// The lines (`LEVEL target: text`) kept so far that contain `needle`.
pub fn lines_with(needle: &str) -> Vec<String> {
    lock()
        .iter()
        .map(Captured::line)
        .filter(|line| line.contains(needle))
        .collect()
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Captured>> {
    EVENTS.lock().unwrap_or_else(|e| e.into_inner())
}

struct Capture {
    level: Level,
}

struct Text<'a>(&'a mut String);

impl Text<'_> {
    fn field(&mut self, field: &Field, value: &dyn std::fmt::Display) {
        if field.name() != "message" {
            let _ = write!(self.0, " {}={value}", field.name());
        } else if self.0.is_empty() {
            let _ = write!(self.0, "{value}");
        } else {
            // A message after other fields still leads the line.
            *self.0 = format!("{value}{}", self.0);
        }
    }
}

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.field(field, &format_args!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.field(field, &value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= self.level
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut text = String::new();
        event.record(&mut Text(&mut text));
        let captured = Captured {
            level: *meta.level(),
            target: meta.target(),
            text,
        };
        if TO_STDERR.load(Ordering::Relaxed) {
            eprintln!("{}", captured.line());
        }
        let mut events = lock();
        if events.len() >= KEPT {
            events.drain(..KEPT / 2);
        }
        events.push(captured);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one test of this binary that installs a subscriber: levels
    /// below the installed one are not kept, fields follow the message,
    /// and a second install changes nothing.
    #[test]
    fn keeps_events_at_the_installed_level_and_above() {
        install_at(Level::INFO);
        install();
        tracing::debug!(test = "capture-levels", "below the level");
        tracing::info!(test = "capture-levels", n = 3, "kept");
        tracing::warn!(test = "capture-levels", "kept too");
        let kept = events(|e| e.text.contains("test=capture-levels"));
        let texts: Vec<_> = kept.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "kept test=capture-levels n=3",
                "kept too test=capture-levels"
            ]
        );
        assert_eq!(kept[1].level, Level::WARN);
        let lines = lines_with("kept too");
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("WARN "), "{lines:?}");
        assert!(lines[0].contains(": kept too"), "{lines:?}");
    }
}
