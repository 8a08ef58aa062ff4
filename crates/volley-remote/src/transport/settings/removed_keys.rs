//! Keys that left the `[remote]` settings, still read with a deprecation
//! warning so that existing files keep working.
//!
//! `batching.enabled` switched write batching off, which nothing but a
//! comparison of the two ever wanted; `batching.max_pending_writes = 1`
//! (one frame per write) now says the same with a setting that has other
//! uses. `enabled = false` is read as that; `enabled = true` changes
//! nothing.

use super::warnings::RemoteSettingsWarning;
use crate::transport::settings::RemoteSettingsError;

const ENABLED: &str = "batching.enabled";
const MAX_PENDING_WRITES: &str = "batching.max_pending_writes";

/// Rewrites the removed keys of a `[remote]` section into what replaced
/// them; returns a deprecation warning for each one found.
pub(super) fn read_removed_keys(
    section: &mut toml::Value,
) -> Result<Vec<RemoteSettingsWarning>, RemoteSettingsError> {
    let Some(batching) = section.get_mut("batching").and_then(|b| b.as_table_mut()) else {
        return Ok(Vec::new());
    };
    let Some(enabled) = batching.remove("enabled") else {
        return Ok(Vec::new());
    };
    let Some(enabled) = enabled.as_bool() else {
        return Err(RemoteSettingsError::Invalid(format!(
            "{ENABLED} must be true or false, not {enabled}"
        )));
    };
    let instead = if enabled {
        "write batching is always on; remove the key"
    } else {
        if batching.contains_key("max_pending_writes") {
            return Err(RemoteSettingsError::BothKeys {
                old_key: ENABLED,
                key: MAX_PENDING_WRITES,
            });
        }
        batching.insert("max_pending_writes".to_owned(), toml::Value::Integer(1));
        "write batching.max_pending_writes = 1 instead of enabled = false"
    };
    Ok(vec![RemoteSettingsWarning::RemovedKey {
        old_key: ENABLED,
        instead,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::settings::RemoteSettings;

    fn read(
        toml: &str,
    ) -> Result<(RemoteSettings, Vec<RemoteSettingsWarning>), RemoteSettingsError> {
        let mut section: toml::Value = toml::from_str(toml).unwrap();
        let warnings = read_removed_keys(&mut section)?;
        let settings = section.try_into().unwrap();
        Ok((settings, warnings))
    }

    #[test]
    fn batching_turned_off_is_read_as_one_frame_per_write_with_a_warning() {
        let (settings, warnings) = read("[batching]\nenabled = false\n").unwrap();
        assert_eq!(settings.batching.max_pending_writes, 1);
        assert!(!settings.batching.batches());
        assert_eq!(
            warnings,
            vec![RemoteSettingsWarning::RemovedKey {
                old_key: ENABLED,
                instead: "write batching.max_pending_writes = 1 instead of enabled = false",
            }]
        );
    }

    #[test]
    fn batching_turned_on_changes_nothing_but_is_warned_about() {
        let (settings, warnings) = read("[batching]\nenabled = true\n").unwrap();
        assert_eq!(settings.batching, Default::default());
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn the_toggle_and_its_replacement_together_or_a_bad_value_are_clear_errors() {
        assert!(matches!(
            read("[batching]\nenabled = false\nmax_pending_writes = 8\n"),
            Err(RemoteSettingsError::BothKeys { .. })
        ));
        assert!(matches!(
            read("[batching]\nenabled = \"no\"\n"),
            Err(RemoteSettingsError::Invalid(_))
        ));
        let (settings, warnings) = read("port = 1\n").unwrap();
        assert_eq!((settings.port, warnings.len()), (1, 0));
    }
}
