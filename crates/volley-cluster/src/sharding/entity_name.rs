//! An entity's child name, from its id: entity ids are any text, actor
//! names are not, so bytes outside the allowed set are percent-encoded, as
//! Akka URL-encodes them. The name shows the id in paths and logs.

use std::fmt::Write;

/// The longest actor name (volley's path rule).
const MAX_NAME: usize = 255;

/// The child name of entity `id`, or `None` when the encoded id is longer
/// than an actor name may be.
pub(crate) fn entity_name(id: &str) -> Option<String> {
    let mut name = String::with_capacity(id.len());
    for &byte in id.as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.*+:@&=,!~';".contains(&byte) {
            name.push(byte as char);
        } else {
            // `$` is allowed but not first; `%` starts an escape: both
            // are escaped everywhere, so decoding stays one rule.
            let _ = write!(name, "%{byte:02X}");
        }
        if name.len() > MAX_NAME {
            return None;
        }
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::entity_name;

    #[test]
    fn plain_ids_stay_and_others_are_percent_encoded() {
        assert_eq!(entity_name("user-42").unwrap(), "user-42");
        assert_eq!(entity_name("a b/c%$").unwrap(), "a%20b%2Fc%25%24");
        assert_eq!(entity_name("é").unwrap(), "%C3%A9");
    }

    #[test]
    fn an_id_too_long_for_a_name_has_none() {
        assert!(entity_name(&"a".repeat(255)).is_some());
        assert!(entity_name(&"a".repeat(256)).is_none());
        assert!(entity_name(&"/".repeat(86)).is_none());
    }
}
