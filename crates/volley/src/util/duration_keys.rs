//! Durations in settings are written with units (`ask_spin = "50us"`,
//! `"200ms"`, `"10s"`) and read by humantime-serde. Each replaced a key
//! that held a whole number of milliseconds or microseconds
//! (`ask_spin_us = 50`); such a key is still read, with a deprecation
//! warning, so that existing files keep working.
//!
//! This runs on a table of TOML before serde reads it: it rewrites each
//! deprecated key into its key with units, and checks every key with units
//! itself, because serde's error for a bad duration does not say which key
//! held it. Public (as `volley::DurationKeys`) so that an extension's
//! section follows the same rules.

use std::fmt;

/// The duration keys of one settings table, each with the deprecated key
/// it replaced (`("ask_spin", "ask_spin_us")`). The deprecated key's
/// suffix, `_ms` or `_us`, gives its unit. A key may name a key of a
/// subtable (`"failure_detector.heartbeat_interval"`).
#[derive(Debug, Clone, Copy)]
pub struct DurationKeys {
    pairs: &'static [(&'static str, &'static str)],
}

/// A duration given under a deprecated key, read as the key with units
/// that replaced it. It will stop being read in a later release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeprecatedDurationKey {
    /// The deprecated key, in full, e.g. `default_dispatcher.idle_spin_us`.
    pub old_key: String,
    /// The key that replaced it, e.g. `default_dispatcher.idle_spin`.
    pub key: String,
    /// The value written with units, e.g. `300us`.
    pub value: String,
}

impl fmt::Display for DeprecatedDurationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DeprecatedDurationKey {
            old_key,
            key,
            value,
        } = self;
        write!(
            f,
            "setting {old_key} is deprecated: write {key} = \"{value}\" instead"
        )
    }
}

/// A duration setting that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationKeyError {
    /// A deprecated key and the key that replaced it, both given.
    #[error("invalid settings: both {old_key} (deprecated) and {key} are set; keep only {key}")]
    BothKeys {
        /// The deprecated key, in full.
        old_key: String,
        /// The key that replaced it, in full.
        key: String,
    },
    /// A value that is not a duration written the way its key needs.
    #[error("invalid setting {key}: {reason}")]
    BadDuration {
        /// The key, in full.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

impl DurationKeys {
    /// The keys of one table: each key with units and the deprecated key it
    /// replaced.
    pub const fn new(pairs: &'static [(&'static str, &'static str)]) -> Self {
        DurationKeys { pairs }
    }

    /// Rewrites the deprecated keys of `table` into their keys with units
    /// and checks every duration written with units. `at` is the table's
    /// own key (empty at the top level), to name keys in full in warnings
    /// and errors. Returns a warning for each deprecated key found.
    pub fn read(
        &self,
        table: &mut toml::Table,
        at: &str,
    ) -> Result<Vec<DeprecatedDurationKey>, DurationKeyError> {
        let mut deprecated = Vec::new();
        for &(key, old_key) in self.pairs {
            // A subtable that is missing or not a table is serde's to report.
            let Some(holder) = table_of(table, key) else {
                continue;
            };
            let (name, old_name) = (last_part(key), last_part(old_key));
            if let Some(old) = holder.remove(old_name) {
                if holder.contains_key(name) {
                    return Err(DurationKeyError::BothKeys {
                        old_key: in_full(at, old_key),
                        key: in_full(at, key),
                    });
                }
                let value = with_units(&in_full(at, old_key), &old)?;
                holder.insert(name.to_owned(), toml::Value::String(value.clone()));
                deprecated.push(DeprecatedDurationKey {
                    old_key: in_full(at, old_key),
                    key: in_full(at, key),
                    value,
                });
            }
            if let Some(value) = holder.get(name) {
                check_duration(&in_full(at, key), value)?;
            }
        }
        Ok(deprecated)
    }

    /// Each key with units and the deprecated key it replaced.
    pub fn pairs(&self) -> &'static [(&'static str, &'static str)] {
        self.pairs
    }

    /// The key with units that replaced `old_key`, if `old_key` is one of
    /// these deprecated keys.
    pub fn replacement_of(&self, old_key: &str) -> Option<&'static str> {
        self.pairs
            .iter()
            .find(|(_, old)| *old == old_key)
            .map(|(key, _)| *key)
    }
}

/// The table that holds `key`: `table` itself, or its subtable named by the
/// part of `key` before the dot.
fn table_of<'a>(table: &'a mut toml::Table, key: &str) -> Option<&'a mut toml::Table> {
    match key.split_once('.') {
        None => Some(table),
        Some((subtable, _)) => table.get_mut(subtable)?.as_table_mut(),
    }
}

fn last_part(key: &str) -> &str {
    key.rsplit_once('.').map_or(key, |(_, name)| name)
}

fn in_full(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// A deprecated key's whole number, written with its unit.
fn with_units(old_key: &str, old: &toml::Value) -> Result<String, DurationKeyError> {
    let (unit, unit_in_full) = if old_key.ends_with("_us") {
        ("us", "microseconds")
    } else {
        ("ms", "milliseconds")
    };
    match old.as_integer() {
        Some(n) if n >= 0 => Ok(format!("{n}{unit}")),
        _ => Err(DurationKeyError::BadDuration {
            key: old_key.to_owned(),
            reason: format!("must be a whole number of {unit_in_full}, not {old}"),
        }),
    }
}

fn check_duration(key: &str, value: &toml::Value) -> Result<(), DurationKeyError> {
    let bad = |reason| DurationKeyError::BadDuration {
        key: key.to_owned(),
        reason,
    };
    let Some(text) = value.as_str() else {
        return Err(bad(format!(
            "must be a duration with units, like \"1s\", \"200ms\" or \"50us\", not {value}"
        )));
    };
    humantime_serde::re::humantime::parse_duration(text)
        .map(|_| ())
        .map_err(|e| bad(format!("{text:?} is not a duration: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: DurationKeys = DurationKeys::new(&[
        ("pause", "pause_ms"),
        ("spin", "spin_us"),
        ("inner.wait", "inner.wait_ms"),
    ]);

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn a_deprecated_key_becomes_its_key_with_units_and_is_reported() {
        let mut t = table("pause_ms = 200\nspin_us = 50\n[inner]\nwait_ms = 7\n");
        let found = KEYS.read(&mut t, "section").unwrap();
        assert_eq!(
            t,
            table("pause = \"200ms\"\nspin = \"50us\"\n[inner]\nwait = \"7ms\"\n")
        );
        let pause = DeprecatedDurationKey {
            old_key: "section.pause_ms".into(),
            key: "section.pause".into(),
            value: "200ms".into(),
        };
        assert_eq!(found[0], pause);
        assert_eq!(found[2].old_key, "section.inner.wait_ms");
        assert_eq!(
            pause.to_string(),
            "setting section.pause_ms is deprecated: write section.pause = \"200ms\" instead"
        );
    }

    #[test]
    fn keys_with_units_are_left_as_they_are() {
        let text = "pause = \"1h 30m\"\nspin = \"0s\"\n";
        let mut t = table(text);
        assert_eq!(KEYS.read(&mut t, "").unwrap(), vec![]);
        assert_eq!(t, table(text));
    }

    #[test]
    fn both_keys_are_an_error_naming_both() {
        let mut t = table("pause_ms = 200\npause = \"1s\"\n");
        let e = KEYS.read(&mut t, "").unwrap_err();
        assert_eq!(
            e,
            DurationKeyError::BothKeys {
                old_key: "pause_ms".into(),
                key: "pause".into()
            }
        );
        assert!(e.to_string().contains("keep only pause"), "{e}");
    }

    #[test]
    fn a_bad_duration_is_an_error_naming_its_key_and_the_fault() {
        let cases = [
            ("pause = \"2 parsecs\"", "a.pause", "parsecs"),
            ("pause = \"5\"", "a.pause", "\"5\" is not a duration"),
            ("pause = 5000", "a.pause", "with units"),
            (
                "pause_ms = \"5s\"",
                "a.pause_ms",
                "whole number of milliseconds",
            ),
            (
                "pause_ms = -1",
                "a.pause_ms",
                "whole number of milliseconds",
            ),
            ("spin_us = 1.5", "a.spin_us", "whole number of microseconds"),
        ];
        for (line, key, what) in cases {
            let e = KEYS.read(&mut table(line), "a").unwrap_err();
            assert!(
                matches!(&e, DurationKeyError::BadDuration { key: k, .. } if k == key),
                "{line}: {e}"
            );
            assert!(e.to_string().contains(what), "{line}: {e}");
        }
    }

    #[test]
    fn replacement_of_names_the_key_with_units() {
        assert_eq!(KEYS.replacement_of("spin_us"), Some("spin"));
        assert_eq!(KEYS.replacement_of("spin"), None);
    }
}
