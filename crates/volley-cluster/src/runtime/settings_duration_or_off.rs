//! A setting that is a duration or `off`, as Akka's
//! `allow-weakly-up-members`: `"7s"` (any duration with a unit), `"off"`
//! or `false` for none, `"on"` or `true` for Akka's default.
//!
//! TOML has no null, so an `Option<Duration>` cannot be written as
//! absent on purpose: absent means the default, and `off` turns it off.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

use crate::member::DEFAULT_WEAKLY_UP_AFTER;

/// Writes `None` as `"off"`, a duration as humantime writes it.
pub(crate) fn serialize<S: Serializer>(
    value: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        None => serializer.serialize_str("off"),
        Some(after) => serializer.serialize_str(&humantime::format_duration(*after).to_string()),
    }
}

/// Reads `"off"`/`false` as `None`, `"on"`/`true` as the default, and any
/// other string as a duration (a zero one is left to the validation).
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    deserializer.deserialize_any(DurationOrOff)
}

struct DurationOrOff;

impl Visitor<'_> for DurationOrOff {
    type Value = Option<Duration>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as \"7s\", or \"off\"")
    }

    fn visit_bool<E: de::Error>(self, on: bool) -> Result<Self::Value, E> {
        Ok(on.then_some(DEFAULT_WEAKLY_UP_AFTER))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        match text.trim() {
            off if off.eq_ignore_ascii_case("off") => Ok(None),
            on if on.eq_ignore_ascii_case("on") => Ok(Some(DEFAULT_WEAKLY_UP_AFTER)),
            other => humantime::parse_duration(other)
                .map(Some)
                .map_err(|_| E::invalid_value(de::Unexpected::Str(text), &self)),
        }
    }
}
