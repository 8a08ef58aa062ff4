//! The `[remote]` section as a settings file gives it: durations written
//! with units, and the deprecated keys in milliseconds or microseconds
//! they replaced, still read with a warning.

use crate::log_capture;

use tracing::Level;
use volley::ActorSystem;
use volley_remote::{register_settings, Registry, Remoting};

/// A file that uses a deprecated key starts remoting, with one warning
/// that names the deprecated key and the key with units to write instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deprecated_key_starts_remoting_with_one_warning_naming_both_keys() {
    log_capture::install();
    register_settings();
    let settings =
        volley::Settings::from_toml_str("[remote]\nshutdown_flush_timeout_ms = 1500\n").unwrap();
    let system = ActorSystem::with_settings("deprecated-key", settings).unwrap();
    Remoting::start(&system, Registry::default())
        .await
        .expect("a deprecated key is still read");
    let warnings = log_capture::events(|e| {
        e.level == Level::WARN && e.text.contains("shutdown_flush_timeout_ms")
    });
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .text
            .contains("write remote.shutdown_flush_timeout = \"1500ms\" instead"),
        "{warnings:?}"
    );
    system.terminate().await;
}
