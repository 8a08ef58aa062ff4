//! SIGTERM runs coordinated shutdown when `shutdown_on_sigterm` is on. A
//! binary of its own: it signals its own process.

#![cfg(unix)]

mod common;

use std::time::Duration;

use volley::{Settings, ShutdownReason};

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn sigterm_runs_coordinated_shutdown() {
    let settings = Settings {
        shutdown_on_sigterm: true,
        ..Settings::default()
    };
    let system = common::system_with("sigterm", settings).unwrap();
    let status = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(std::process::id().to_string())
        .status()
        .expect("kill runs");
    assert!(status.success());
    tokio::time::timeout(Duration::from_secs(30), system.when_terminated())
        .await
        .expect("SIGTERM did not terminate the system");
    assert_eq!(
        system.coordinated_shutdown().reason(),
        Some(ShutdownReason::Sigterm)
    );
}
