//! A one-pass reading of the JSON `ask` and `tell` frames whose tag `t`
//! comes first, as every client this project ships writes them.
//!
//! serde reads an internally tagged enum (`ClientFrame`, `#[serde(tag =
//! "t")]`) by buffering the whole object into its own tree first, since the
//! tag may come last: each field and the message's every node are built
//! twice. With the tag first, its variant is known before the other fields
//! come, and they are read straight into the variant. Anything else (the
//! tag later, another kind of frame, a malformed frame) is read the general
//! way, which also words the errors: the result is always the derived
//! reading's, only cheaper for the common frames.

use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::frame::ClientFrame;

/// The frame in `json` when it is an `ask` or a `tell` with `t` first;
/// `None` for any other input, which the caller reads the general way.
pub(crate) fn decode(json: &[u8]) -> Option<ClientFrame> {
    read(serde_json::de::SliceRead::new(json))
}

/// [`decode`] of a text known to be UTF-8 (a long-poll body's frame),
/// which spares the check of each string.
pub(crate) fn decode_text(json: &str) -> Option<ClientFrame> {
    read(serde_json::de::StrRead::new(json))
}

fn read<'de, R: serde_json::de::Read<'de>>(json: R) -> Option<ClientFrame> {
    let mut deserializer = serde_json::Deserializer::new(json);
    let frame = deserializer.deserialize_map(TagFirst).ok()?;
    deserializer.end().ok()?;
    Some(frame)
}

/// The kinds read here; the others take the general way.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Tell,
    Ask,
}

#[derive(Deserialize)]
struct TellFields {
    service: String,
    msg: Value,
    #[serde(default, rename = "t")]
    tag_again: TagAgain,
}

#[derive(Deserialize)]
struct AskFields {
    id: u64,
    service: String,
    msg: Value,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default, rename = "t")]
    tag_again: TagAgain,
}

/// Set when `t` comes a second time, which the derived reading refuses
/// (a duplicate field): such a frame is left to it.
#[derive(Default)]
struct TagAgain(bool);

impl<'de> Deserialize<'de> for TagAgain {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| TagAgain(true))
    }
}

/// Whether a key is `t`, without copying it.
struct IsTag(bool);

impl<'de> Deserialize<'de> for IsTag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = IsTag;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<IsTag, E> {
                Ok(IsTag(key == "t"))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct TagFirst;

impl<'de> Visitor<'de> for TagFirst {
    type Value = ClientFrame;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an ask or tell frame with t first")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClientFrame, A::Error> {
        if !map.next_key::<IsTag>()?.is_some_and(|IsTag(t)| t) {
            return Err(de::Error::custom("t is not the first key"));
        }
        let kind: Kind = map.next_value()?;
        let rest = MapAccessDeserializer::new(map);
        let (frame, tag_again) = match kind {
            Kind::Tell => {
                let f = TellFields::deserialize(rest)?;
                let frame = ClientFrame::Tell {
                    service: f.service,
                    msg: f.msg,
                };
                (frame, f.tag_again)
            }
            Kind::Ask => {
                let f = AskFields::deserialize(rest)?;
                let frame = ClientFrame::Ask {
                    id: f.id,
                    service: f.service,
                    msg: f.msg,
                    timeout_ms: f.timeout_ms,
                };
                (frame, f.tag_again)
            }
        };
        match tag_again {
            TagAgain(true) => Err(de::Error::duplicate_field("t")),
            TagAgain(false) => Ok(frame),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derived(json: &str) -> Result<ClientFrame, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn ask_and_tell_with_the_tag_first_read_as_the_derived_reading_does() {
        for json in [
            r#"{"t":"ask","id":7,"service":"counter","msg":{"add":2}}"#,
            r#" { "t" : "ask" , "msg" : [1, {"a": null}], "service": "c\"x", "id": 1, "timeout_ms": 50 } "#,
            r#"{"t":"ask","id":7,"service":"counter","msg":1,"extra":{"deep":[1,2]}}"#,
            r#"{"t":"tell","service":"log","msg":"hi"}"#,
            r#"{"t":"tell","msg":{"b":1,"a":2},"service":"log"}"#,
        ] {
            assert_eq!(
                decode(json.as_bytes()),
                Some(derived(json).unwrap()),
                "{json}"
            );
            assert_eq!(decode_text(json), decode(json.as_bytes()), "{json}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_derived_reading() {
        for json in [
            // Valid, but not read here.
            r#"{"id":7,"t":"ask","service":"counter","msg":1}"#,
            r#"{"t":"ping","n":3}"#,
            r#"{"t":"hello","v":1}"#,
            // Refused by the derived reading, whose error is the one sent.
            r#"{"t":"ask","id":7,"service":"counter","msg":1,"t":"tell"}"#,
            r#"{"t":"ask","id":-1,"service":"counter","msg":1}"#,
            r#"{"t":"ask","service":"counter","msg":1}"#,
            r#"{"t":"ask","id":7,"service":"counter"}"#,
            r#"{"t":"ask","id":7,"id":8,"service":"counter","msg":1}"#,
            r#"{"t":"ask","id":7,"service":"counter","msg":1} x"#,
            r#"{"t":"nope"}"#,
            r#"["ask",7,"counter",1]"#,
            r#"{"t":"ask","id":7,"service":"counter","msg":1"#,
        ] {
            assert_eq!(decode(json.as_bytes()), None, "{json}");
            assert_eq!(decode_text(json), None, "{json}");
        }
        // The ones the derived reading takes, it takes as before.
        assert!(derived(r#"{"id":7,"t":"ask","service":"counter","msg":1}"#).is_ok());
        assert!(derived(r#"{"t":"ask","id":7,"service":"counter","msg":1,"t":"tell"}"#).is_err());
    }
}
