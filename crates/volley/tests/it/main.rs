//! volley's integration tests, in one binary (one link instead of one per
//! file), grouped by feature. Each module's doc names the Pekko spec its
//! cases come from. Tests that build their systems through
//! `common::system` run once per dispatcher kind (`#[each_dispatcher]`).
//!
//! Suites that need a process of their own stay in binaries of their own:
//! `memory` (a counting global allocator), `message_spans` and
//! `trace_context` (each installs its global tracing subscriber) and
//! `coordinated_shutdown_sigterm` (it signals its own process).

mod actor;
mod ask;
mod circuit_breaker;
#[path = "../common/mod.rs"]
mod common;
mod death_watch;
mod discovery;
mod dispatch;
mod mailbox;
mod metrics;
mod net;
mod remote_seam;
mod routing;
mod settings;
mod soak;
mod supervision;
mod system;
mod time;
