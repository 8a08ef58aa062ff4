//! Typed settings with documented defaults, loadable from TOML and
//! overridable from the environment.
//!
//! Environment overrides use the prefix `VOLLEY__` and `__` between keys, so
//! `VOLLEY__DEFAULT_DISPATCHER__THROUGHPUT=50` sets
//! `default_dispatcher.throughput`. Values are read as TOML scalars (numbers,
//! booleans) and otherwise as strings. Unknown keys are errors, so a typo in a
//! settings file is reported instead of silently ignored.
//!
//! Durations are written with units (`ask_spin = "50us"`,
//! `shutdown_phase_timeout = "5s"`). The keys they replaced, whole numbers
//! of milliseconds or microseconds (`ask_spin_us = 50`), are still read,
//! with a deprecation warning (`util/duration_keys.rs`); giving both is an
//! error. An environment override under a deprecated key replaces the value
//! either key set before it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::RwLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::util::duration_keys::{DeprecatedDurationKey, DurationKeyError, DurationKeys};

/// What runs a dispatcher's actors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispatcherKind {
    /// A pool of threads of its own with work-stealing queues
    /// (`work-stealing`, the default): the fastest between actors.
    #[default]
    WorkStealing,
    /// Tasks on the system's tokio runtime (`app-runtime`): the
    /// application's, when the system was started with
    /// `ActorSystem::with_runtime`. The fastest way in from async code
    /// on that runtime. `threads` and `idle_spin` do not apply.
    AppRuntime,
}

/// Settings of one dispatcher (what runs actors: a pool of threads, or
/// tasks on a tokio runtime).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DispatcherSettings {
    /// What runs the actors. Default `work-stealing`.
    pub kind: DispatcherKind,
    /// Worker threads; 0 means one per available core. Default 0.
    pub threads: usize,
    /// Messages an actor handles per activation before it yields its thread
    /// (Akka's `throughput`). Higher trades fairness for throughput. Default
    /// 100, picked by a throughput sweep (docs/design-notes.md#dispatcher-throughput): gains stop
    /// there, and 100 short messages hold a thread for about a
    /// microsecond.
    pub throughput: usize,
    /// If set, an activation also yields once it has run this long (Akka's
    /// `throughput-deadline-time`), e.g. `"100us"`. Default: none.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub throughput_deadline: Option<Duration>,
    /// How long an idle worker keeps looking for work (spinning, yielding
    /// its core every few spins) before it parks. Work that arrives in that
    /// window starts without a wake-up, and the core does not go idle: on a
    /// VM, waking a halted core is slow. The price is CPU time burnt after
    /// each burst of work. Default 300 µs (`"300us"`), picked by measurement
    /// with remote ping-pong (docs/design-notes.md#idle-spin-before-parking);
    /// 0 parks after a short spin.
    #[serde(with = "humantime_serde")]
    pub idle_spin: Duration,
}

impl Default for DispatcherSettings {
    fn default() -> Self {
        DispatcherSettings {
            kind: DispatcherKind::WorkStealing,
            threads: 0,
            throughput: 100,
            throughput_deadline: None,
            idle_spin: Duration::from_micros(300),
        }
    }
}

impl DispatcherSettings {
    /// The number of threads this dispatcher will start.
    pub fn effective_threads(&self) -> usize {
        if self.threads == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            self.threads
        }
    }
}

/// How dead letters are reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeadLetterSettings {
    /// Log dead letters at debug level. Default true.
    pub log: bool,
    /// At most this many dead-letter log lines per second; the rest are only
    /// counted. Default 10.
    pub log_per_second: u32,
}

impl Default for DeadLetterSettings {
    fn default() -> Self {
        DeadLetterSettings {
            log: true,
            log_per_second: 10,
        }
    }
}

/// Settings of an actor system.
///
/// Unknown top-level keys are caught by `extensions` and rejected in
/// [`Settings::validate`] unless they name a known extension section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The dispatcher actors run on unless their props name another.
    pub default_dispatcher: DispatcherSettings,
    /// Further named dispatchers, e.g. an isolated pool for blocking work.
    pub dispatchers: BTreeMap<String, DispatcherSettings>,
    /// Threads of the tokio runtime that runs timers, `pipe_to` futures and
    /// I/O. Default 1.
    pub io_threads: usize,
    /// Dead-letter reporting.
    pub dead_letters: DeadLetterSettings,
    /// How long an `ask` to an actor on a work-stealing pool spins,
    /// looking for its reply, before it registers a waker and arms its
    /// timeout. A reply in that window costs no timer and no cross-thread
    /// wake-up; the price is the asking thread, held while it spins (a
    /// pool usually answers within a few microseconds). 0 parks at once.
    /// Asks to actors on an `app-runtime` dispatcher and to remote actors
    /// never spin. At most 10 ms. Default 50 µs (`"50us"`; not swept yet,
    /// docs/design-notes.md#ask-spin).
    #[serde(with = "humantime_serde")]
    pub ask_spin: Duration,
    /// The most time all shutdown hooks (see
    /// `ActorSystem::add_shutdown_hook`) get together, counted from the
    /// moment the last actor has stopped. A hook still running then is
    /// abandoned and the hooks after it are skipped, each with a warning, so
    /// `terminate()` cannot hang on one. At least 1 ms. Default 10 s
    /// (`"10s"`).
    #[serde(with = "humantime_serde")]
    pub shutdown_hooks_timeout: Duration,
    /// Runtime metrics through the `metrics` facade (`[metrics]`).
    pub metrics: crate::observability::metrics::MetricsSettings,
    /// Tracing spans around handled messages (`[tracing]`).
    pub tracing: crate::observability::message_spans::TracingSettings,
    /// Runs the system's timers (actor timers, receive timeouts) on this
    /// clock instead of real time: for tests, which advance it by hand
    /// (volley-testkit's `ManualTime`). Not read from or written to TOML.
    /// Default `None`: real time.
    #[serde(skip)]
    pub manual_clock: Option<crate::time::clock::ManualClock>,
    /// How long each coordinated-shutdown phase before the actors stop
    /// (see `CoordinatedShutdown`) may take; a task still running then is
    /// reported and abandoned and the next phase starts. At least 1 ms.
    /// Default 5 s (`"5s"`), Akka's default phase timeout.
    #[serde(with = "humantime_serde")]
    pub shutdown_phase_timeout: Duration,
    /// Run coordinated shutdown (reason `Sigterm`) when the process gets
    /// SIGTERM (Unix only). Default false: the application owns its signals.
    pub shutdown_on_sigterm: bool,
    /// At shutdown, each actor handles the messages already queued for it
    /// before it stops, parents before their children, for at most
    /// `shutdown_phase_timeout`; past that the actors still running
    /// stop at once and what they had queued becomes dead letters.
    /// Default true. False stops every actor at once, as Akka does.
    pub drain_on_shutdown: bool,
    /// Extra sections owned by extensions (e.g. `remote`), kept as raw TOML
    /// for them to parse and validate.
    #[serde(flatten)]
    pub extensions: BTreeMap<String, toml::Value>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            default_dispatcher: DispatcherSettings::default(),
            dispatchers: BTreeMap::new(),
            io_threads: 1,
            dead_letters: DeadLetterSettings::default(),
            ask_spin: Duration::from_micros(50),
            shutdown_hooks_timeout: Duration::from_secs(10),
            metrics: crate::observability::metrics::MetricsSettings::default(),
            tracing: crate::observability::message_spans::TracingSettings::default(),
            manual_clock: None,
            shutdown_phase_timeout: Duration::from_secs(5),
            shutdown_on_sigterm: false,
            drain_on_shutdown: true,
            extensions: BTreeMap::new(),
        }
    }
}

/// Sections that extensions registered (see [`Settings::register_section`]).
static SECTIONS: RwLock<BTreeSet<&'static str>> = RwLock::new(BTreeSet::new());

/// Names the core settings use at the top level (with the deprecated
/// duration keys, still read); no extension may take them.
const CORE_KEYS: &[&str] = &[
    "default_dispatcher",
    "dispatchers",
    "io_threads",
    "dead_letters",
    "ask_spin",
    "ask_spin_us",
    "shutdown_hooks_timeout",
    "shutdown_hooks_timeout_ms",
    "metrics",
    "tracing",
    "shutdown_phase_timeout",
    "shutdown_phase_timeout_ms",
    "shutdown_on_sigterm",
    "drain_on_shutdown",
];

/// The top level's durations and the deprecated keys they replaced.
const TOP_LEVEL_DURATIONS: DurationKeys = DurationKeys::new(&[
    ("ask_spin", "ask_spin_us"),
    ("shutdown_hooks_timeout", "shutdown_hooks_timeout_ms"),
    ("shutdown_phase_timeout", "shutdown_phase_timeout_ms"),
]);

/// A dispatcher's durations and the deprecated keys they replaced.
const DISPATCHER_DURATIONS: DurationKeys = DurationKeys::new(&[
    ("throughput_deadline", "throughput_deadline_us"),
    ("idle_spin", "idle_spin_us"),
]);

/// `[metrics]`' durations and the deprecated keys they replaced.
const METRICS_DURATIONS: DurationKeys =
    DurationKeys::new(&[("sample_interval", "sample_interval_ms")]);

/// A settings file or override that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file could not be read.
    #[error("cannot read settings file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML is malformed or does not match the settings' shape.
    #[error("invalid settings{}: {message}", origin.as_deref().map(|o| format!(" in {o}")).unwrap_or_default())]
    Invalid {
        /// Where the settings came from (file or environment variable).
        origin: Option<String>,
        /// What is wrong, from the TOML parser.
        message: String,
    },
    /// A value is out of range.
    #[error("invalid setting {key}: {reason}")]
    OutOfRange {
        /// The key.
        key: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A duration that cannot be read, or a deprecated duration key given
    /// with the key that replaced it.
    #[error(transparent)]
    Duration(#[from] DurationKeyError),
}

impl Settings {
    /// Parses settings from TOML text; missing keys keep their defaults.
    pub fn from_toml_str(text: &str) -> Result<Self, SettingsError> {
        let value: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| SettingsError::Invalid {
                    origin: None,
                    message: e.to_string(),
                })?;
        Self::from_table(value, None)
    }

    /// Reads settings from a TOML file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SettingsError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| SettingsError::Invalid {
                    origin: Some(path.display().to_string()),
                    message: e.to_string(),
                })?;
        Self::from_table(table, Some(path.display().to_string()))
    }

    /// Applies `VOLLEY__A__B=value` overrides from the process environment.
    pub fn with_env_overrides(self) -> Result<Self, SettingsError> {
        self.with_overrides(std::env::vars())
    }

    /// Applies overrides given as `(VOLLEY__A__B, value)` pairs; other names
    /// are ignored. Testable without touching the process environment.
    pub fn with_overrides(
        self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, SettingsError> {
        let mut table = toml::Table::try_from(&self).map_err(|e| SettingsError::Invalid {
            origin: None,
            message: e.to_string(),
        })?;
        let mut origin = None;
        for (name, raw) in vars {
            let Some(rest) = name.strip_prefix("VOLLEY__") else {
                continue;
            };
            let keys: Vec<String> = rest.split("__").map(|k| k.to_ascii_lowercase()).collect();
            if keys.iter().any(String::is_empty) {
                return Err(SettingsError::Invalid {
                    origin: Some(name.clone()),
                    message: "empty key in environment override".into(),
                });
            }
            let value = parse_scalar(&raw);
            forget_replaced_duration(&mut table, &keys);
            insert_path(&mut table, &keys, value).map_err(|message| SettingsError::Invalid {
                origin: Some(name.clone()),
                message,
            })?;
            origin = Some(name);
        }
        // The clock is not TOML, so the round trip would lose it.
        let manual_clock = self.manual_clock;
        let propagator = self.tracing.propagator;
        let mut settings = Self::from_table(table, origin)?;
        settings.manual_clock = manual_clock;
        settings.tracing.propagator = propagator;
        Ok(settings)
    }

    fn from_table(mut table: toml::Table, origin: Option<String>) -> Result<Self, SettingsError> {
        for deprecated in read_duration_keys(&mut table)? {
            tracing::warn!(origin = origin.as_deref(), "{deprecated}");
        }
        let settings: Settings =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| SettingsError::Invalid {
                    origin: origin.clone(),
                    message: e.to_string(),
                })?;
        settings.validate()?;
        Ok(settings)
    }

    /// Lets a top-level section called `name` appear in settings: an
    /// extension (e.g. `volley-remote`, whose section is `remote`) calls it
    /// before settings that hold its section are parsed, and reads the
    /// section from [`Settings::extensions`]. Any other unknown top-level
    /// key is an error, so a typo is reported instead of ignored.
    /// Registering a name twice is harmless; a core key cannot be taken.
    pub fn register_section(name: &'static str) -> Result<(), SettingsError> {
        if CORE_KEYS.contains(&name) {
            return Err(SettingsError::OutOfRange {
                key: name.to_string(),
                reason: "is a core settings key and cannot be an extension section",
            });
        }
        crate::util::locks::write(&SECTIONS).insert(name);
        Ok(())
    }

    /// Checks ranges that the types alone do not.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let registered = crate::util::locks::read(&SECTIONS);
        if let Some(key) = self
            .extensions
            .keys()
            .find(|key| !registered.contains(key.as_str()))
        {
            return Err(SettingsError::Invalid {
                origin: None,
                message: format!(
                    "unknown settings section or key `{key}` (an extension's section is known once \
                     the extension registered it, e.g. `volley_remote::register_settings()` for \
                     `remote`)"
                ),
            });
        }
        drop(registered);
        let check = |key: String, d: &DispatcherSettings| {
            if d.throughput == 0 {
                return Err(SettingsError::OutOfRange {
                    key: format!("{key}.throughput"),
                    reason: "must be at least 1",
                });
            }
            if d.threads > 1024 {
                return Err(SettingsError::OutOfRange {
                    key: format!("{key}.threads"),
                    reason: "must be at most 1024",
                });
            }
            Ok(())
        };
        check("default_dispatcher".into(), &self.default_dispatcher)?;
        for (name, d) in &self.dispatchers {
            check(format!("dispatchers.{name}"), d)?;
        }
        if self.io_threads == 0 || self.io_threads > 256 {
            return Err(SettingsError::OutOfRange {
                key: "io_threads".into(),
                reason: "must be between 1 and 256",
            });
        }
        if self.shutdown_phase_timeout < Duration::from_millis(1) {
            return Err(SettingsError::OutOfRange {
                key: "shutdown_phase_timeout".into(),
                reason: "must be at least 1 ms",
            });
        }
        if self.shutdown_hooks_timeout < Duration::from_millis(1) {
            return Err(SettingsError::OutOfRange {
                key: "shutdown_hooks_timeout".into(),
                reason: "must be at least 1 ms",
            });
        }
        if self.metrics.sample_interval < Duration::from_millis(10) {
            return Err(SettingsError::OutOfRange {
                key: "metrics.sample_interval".into(),
                reason: "must be at least 10 ms",
            });
        }
        if self.ask_spin > Duration::from_millis(10) {
            return Err(SettingsError::OutOfRange {
                key: "ask_spin".into(),
                reason: "must be at most 10ms (a longer poll only burns the asking thread)",
            });
        }
        Ok(())
    }
}

/// Rewrites every deprecated duration key of the settings into its key with
/// units (see the module's doc), at the top level, in `[metrics]` and in
/// each dispatcher's section.
fn read_duration_keys(
    table: &mut toml::Table,
) -> Result<Vec<DeprecatedDurationKey>, DurationKeyError> {
    let mut deprecated = TOP_LEVEL_DURATIONS.read(table, "")?;
    if let Some(metrics) = table.get_mut("metrics").and_then(toml::Value::as_table_mut) {
        deprecated.extend(METRICS_DURATIONS.read(metrics, "metrics")?);
    }
    if let Some(dispatcher) = table
        .get_mut("default_dispatcher")
        .and_then(toml::Value::as_table_mut)
    {
        deprecated.extend(DISPATCHER_DURATIONS.read(dispatcher, "default_dispatcher")?);
    }
    let named = table
        .get_mut("dispatchers")
        .and_then(toml::Value::as_table_mut);
    for (name, dispatcher) in named.into_iter().flatten() {
        if let Some(dispatcher) = dispatcher.as_table_mut() {
            let at = format!("dispatchers.{name}");
            deprecated.extend(DISPATCHER_DURATIONS.read(dispatcher, &at)?);
        }
    }
    Ok(deprecated)
}

/// Before an override under a deprecated duration key is applied, takes out
/// the value the settings hold under its key with units, so that the
/// override replaces it instead of clashing with it.
fn forget_replaced_duration(table: &mut toml::Table, keys: &[String]) {
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let durations = match parents {
        [] => TOP_LEVEL_DURATIONS,
        [section] if section == "metrics" => METRICS_DURATIONS,
        [section] if section == "default_dispatcher" => DISPATCHER_DURATIONS,
        [section, _] if section == "dispatchers" => DISPATCHER_DURATIONS,
        _ => return,
    };
    let Some(key) = durations.replacement_of(last) else {
        return;
    };
    let mut holder = Some(table);
    for parent in parents {
        holder = holder
            .and_then(|t| t.get_mut(parent.as_str()))
            .and_then(toml::Value::as_table_mut);
    }
    if let Some(holder) = holder {
        holder.remove(key);
    }
}

fn parse_scalar(raw: &str) -> toml::Value {
    let probe = format!("v = {raw}");
    match probe.parse::<toml::Table>() {
        Ok(mut t) => match t.remove("v") {
            Some(
                v @ (toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_)),
            ) => v,
            _ => toml::Value::String(raw.to_string()),
        },
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

fn insert_path(table: &mut toml::Table, keys: &[String], value: toml::Value) -> Result<(), String> {
    let (last, parents) = keys.split_last().expect("at least one key");
    let mut current = table;
    for key in parents {
        let entry = current
            .entry(key.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{key}` is not a section"))?;
    }
    current.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_documented_values() {
        let s = Settings::default();
        assert_eq!(s.default_dispatcher.throughput, 100);
        assert_eq!(s.io_threads, 1);
        assert_eq!(s.shutdown_hooks_timeout, Duration::from_secs(10));
        assert_eq!(s.shutdown_phase_timeout, Duration::from_secs(5));
        assert_eq!(s.ask_spin, Duration::from_micros(50));
        assert_eq!(s.default_dispatcher.idle_spin, Duration::from_micros(300));
        assert_eq!(s.default_dispatcher.throughput_deadline, None);
        assert_eq!(s.metrics.sample_interval, Duration::from_secs(1));
        s.validate().unwrap();
    }

    #[test]
    fn toml_overrides_defaults() {
        let s = Settings::from_toml_str(
            "io_threads = 2\n[default_dispatcher]\nthroughput = 5\n[dispatchers.blocking]\nthreads = 4\n",
        )
        .unwrap();
        assert_eq!(s.default_dispatcher.throughput, 5);
        assert_eq!(s.dispatchers["blocking"].threads, 4);
        assert_eq!(s.dispatchers["blocking"].throughput, 100);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_clear_errors() {
        let e = Settings::from_toml_str("[default_dispatcher]\nthroughput = \"fast\"").unwrap_err();
        assert!(e.to_string().contains("throughput"), "{e}");
        let e = Settings::from_toml_str("[default_dispatcher]\nthrougput = 5").unwrap_err();
        assert!(e.to_string().contains("throughput"), "{e}");
        let e = Settings::from_toml_str("nonsense = 1").unwrap_err();
        assert!(e.to_string().contains("nonsense"), "{e}");
        let e = Settings::from_toml_str("[default_dispatcher]\nthroughput = 0").unwrap_err();
        assert!(matches!(e, SettingsError::OutOfRange { .. }), "{e}");
        let e = Settings::from_toml_str("shutdown_hooks_timeout = \"0s\"").unwrap_err();
        assert!(matches!(e, SettingsError::OutOfRange { .. }), "{e}");
        let e = Settings::from_toml_str("shutdown_hooks_timeout_ms = 0").unwrap_err();
        assert!(e.to_string().contains("shutdown_hooks_timeout"), "{e}");
        let e = Settings::from_toml_str("ask_spin = \"1s\"").unwrap_err();
        assert!(e.to_string().contains("ask_spin"), "{e}");
        let e = Settings::from_toml_str("this is = not toml [").unwrap_err();
        assert!(matches!(e, SettingsError::Invalid { .. }), "{e}");
    }

    #[test]
    fn env_overrides_apply_and_validate() {
        let s = Settings::default()
            .with_overrides(vec![
                (
                    "VOLLEY__DEFAULT_DISPATCHER__THROUGHPUT".to_string(),
                    "200".to_string(),
                ),
                ("PATH".to_string(), "/bin".to_string()),
            ])
            .unwrap();
        assert_eq!(s.default_dispatcher.throughput, 200);
        let e = Settings::default()
            .with_overrides(vec![("VOLLEY__IO_THREADS".to_string(), "lots".to_string())])
            .unwrap_err();
        assert!(e.to_string().contains("VOLLEY__IO_THREADS"), "{e}");
    }

    #[test]
    fn overrides_keep_the_manual_clock() {
        let clock = crate::time::clock::ManualClock::new();
        let s = Settings {
            manual_clock: Some(clock.clone()),
            ..Settings::default()
        }
        .with_overrides(vec![("VOLLEY__IO_THREADS".to_string(), "2".to_string())])
        .unwrap();
        assert_eq!(s.io_threads, 2);
        assert_eq!(s.manual_clock, Some(clock));
    }

    #[test]
    fn an_extension_section_is_accepted_once_registered() {
        let text = "[volley_test_extension]\nanswer = 42\n";
        let e = Settings::from_toml_str(text).unwrap_err();
        assert!(e.to_string().contains("volley_test_extension"), "{e}");
        Settings::register_section("volley_test_extension").unwrap();
        let s = Settings::from_toml_str(text).unwrap();
        assert_eq!(
            s.extensions["volley_test_extension"]["answer"].as_integer(),
            Some(42)
        );
        let e = Settings::register_section("io_threads").unwrap_err();
        assert!(matches!(e, SettingsError::OutOfRange { .. }), "{e}");
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let e = Settings::from_file("/definitely/not/here.toml").unwrap_err();
        assert!(matches!(e, SettingsError::Io { .. }));
    }

    /// Every deprecated key: TOML under it reads the same as TOML under
    /// its key with units, and reading it reports it with both names.
    #[test]
    fn each_deprecated_duration_key_reads_the_same_value_with_a_warning() {
        let cases = [
            ("ask_spin_us = 7", "ask_spin = \"7us\"", "ask_spin_us"),
            (
                "shutdown_hooks_timeout_ms = 1500",
                "shutdown_hooks_timeout = \"1500ms\"",
                "shutdown_hooks_timeout_ms",
            ),
            (
                "shutdown_phase_timeout_ms = 1500",
                "shutdown_phase_timeout = \"1.5s\"",
                "shutdown_phase_timeout_ms",
            ),
            (
                "[default_dispatcher]\nidle_spin_us = 20",
                "[default_dispatcher]\nidle_spin = \"20us\"",
                "default_dispatcher.idle_spin_us",
            ),
            (
                "[default_dispatcher]\nthroughput_deadline_us = 100",
                "[default_dispatcher]\nthroughput_deadline = \"100us\"",
                "default_dispatcher.throughput_deadline_us",
            ),
            (
                "[metrics]\nsample_interval_ms = 250",
                "[metrics]\nsample_interval = \"250ms\"",
                "metrics.sample_interval_ms",
            ),
            (
                "[dispatchers.blocking]\nidle_spin_us = 0",
                "[dispatchers.blocking]\nidle_spin = \"0s\"",
                "dispatchers.blocking.idle_spin_us",
            ),
        ];
        for (old, new, old_key) in cases {
            let from_old = Settings::from_toml_str(old).unwrap();
            assert_eq!(from_old, Settings::from_toml_str(new).unwrap(), "{old}");
            assert_ne!(from_old, Settings::default(), "{old}");
            let mut table: toml::Table = old.parse().unwrap();
            let warnings = read_duration_keys(&mut table).unwrap();
            assert_eq!(warnings.len(), 1, "{old}");
            assert_eq!(warnings[0].old_key, old_key);
            let text = warnings[0].to_string();
            assert!(text.contains("is deprecated: write"), "{text}");
        }
    }

    #[test]
    fn durations_are_read_with_units() {
        let s = Settings::from_toml_str(concat!(
            "ask_spin = \"0s\"\nshutdown_phase_timeout = \"1m 30s\"\n",
            "[default_dispatcher]\nthroughput_deadline = \"2ms\"\nidle_spin = \"1ms\"\n",
        ))
        .unwrap();
        assert_eq!(s.ask_spin, Duration::ZERO);
        assert_eq!(s.shutdown_phase_timeout, Duration::from_secs(90));
        assert_eq!(
            s.default_dispatcher.throughput_deadline,
            Some(Duration::from_millis(2))
        );
        assert_eq!(s.default_dispatcher.idle_spin, Duration::from_millis(1));
    }

    #[test]
    fn a_badly_written_duration_is_an_error_naming_its_key() {
        let cases = [
            ("ask_spin = \"50 parsecs\"", "ask_spin", "parsecs"),
            ("ask_spin = 50", "ask_spin", "with units"),
            (
                "[dispatchers.io]\nidle_spin = \"fast\"",
                "dispatchers.io.idle_spin",
                "\"fast\" is not a duration",
            ),
            (
                "shutdown_phase_timeout_ms = \"5s\"",
                "shutdown_phase_timeout_ms",
                "whole number of milliseconds",
            ),
        ];
        for (text, key, what) in cases {
            let e = Settings::from_toml_str(text).unwrap_err();
            assert!(
                matches!(&e, SettingsError::Duration(DurationKeyError::BadDuration { key: k, .. }) if k == key),
                "{text}: {e}"
            );
            assert!(e.to_string().contains(what), "{text}: {e}");
        }
    }

    #[test]
    fn a_deprecated_key_and_its_replacement_together_are_an_error_naming_both() {
        let e = Settings::from_toml_str(
            "[default_dispatcher]\nidle_spin_us = 5\nidle_spin = \"5us\"\n",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("both default_dispatcher.idle_spin_us (deprecated)")
                && text.contains("keep only default_dispatcher.idle_spin"),
            "{text}"
        );
    }

    /// Settings hold durations under the keys with units, so an override
    /// under a deprecated key replaces that value instead of clashing.
    #[test]
    fn env_overrides_of_durations_take_units_and_deprecated_keys() {
        let s = Settings::default()
            .with_overrides(vec![
                ("VOLLEY__ASK_SPIN".to_string(), "20us".to_string()),
                (
                    "VOLLEY__SHUTDOWN_PHASE_TIMEOUT_MS".to_string(),
                    "250".to_string(),
                ),
                (
                    "VOLLEY__DEFAULT_DISPATCHER__IDLE_SPIN_US".to_string(),
                    "0".to_string(),
                ),
            ])
            .unwrap();
        assert_eq!(s.ask_spin, Duration::from_micros(20));
        assert_eq!(s.shutdown_phase_timeout, Duration::from_millis(250));
        assert_eq!(s.default_dispatcher.idle_spin, Duration::ZERO);
    }

    /// Settings written out come back the same, with units.
    #[test]
    fn durations_are_written_with_units() {
        let mut settings = Settings::default();
        settings.default_dispatcher.throughput_deadline = Some(Duration::from_micros(100));
        let text = toml::to_string(&settings).unwrap();
        assert!(text.contains("ask_spin = \"50us\""), "{text}");
        assert!(text.contains("idle_spin = \"300us\""), "{text}");
        assert!(text.contains("throughput_deadline = \"100us\""), "{text}");
        assert_eq!(Settings::from_toml_str(&text).unwrap(), settings);
        let text = toml::to_string(&Settings::default()).unwrap();
        assert!(!text.contains("throughput_deadline"), "{text}");
    }
}
