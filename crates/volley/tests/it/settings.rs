//! Settings as a file gives them: durations written with units, and the
//! deprecated keys in milliseconds or microseconds they replaced, still
//! read with a warning.

use crate::common::log_capture;

use std::time::Duration;

use tracing::Level;
use volley::Settings;

/// A file that uses a deprecated key is read as if it held the key with
/// units, with one warning that names the file, the deprecated key and the
/// line to write instead.
#[test]
fn a_file_with_a_deprecated_key_is_read_with_one_warning_naming_both_keys() {
    log_capture::install();
    let path =
        std::env::temp_dir().join(format!("volley-deprecated-key-{}.toml", std::process::id()));
    std::fs::write(&path, "[dispatchers.deprecated-key]\nidle_spin_us = 40\n").unwrap();
    let settings = Settings::from_file(&path);
    std::fs::remove_file(&path).unwrap();
    let settings = settings.expect("a deprecated key is still read");
    assert_eq!(
        settings.dispatchers["deprecated-key"].idle_spin,
        Duration::from_micros(40)
    );
    let warnings = log_capture::logged(&["dispatchers.deprecated-key.idle_spin_us"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].level, Level::WARN);
    assert!(
        warnings[0]
            .text
            .contains("write dispatchers.deprecated-key.idle_spin = \"40us\" instead"),
        "{warnings:?}"
    );
    assert!(
        warnings[0].text.contains(&*path.to_string_lossy()),
        "{warnings:?}"
    );
}
