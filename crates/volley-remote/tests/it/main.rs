//! volley-remote's integration tests, in one binary (one link instead of
//! one per file), grouped by feature. Each module's doc names the Pekko
//! spec its cases come from. Tests whose nodes come from `common::node`
//! run once per dispatcher kind (`#[each_dispatcher]`).
//!
//! Suites that need a process of their own stay in binaries of their own:
//! `processes` (tests that start peer processes from their own binary),
//! `alloc` (a counting global allocator) and `trace_context` (it installs
//! its global tracing subscriber).

mod association;
mod cluster_frames;
#[path = "../common/mod.rs"]
mod common;
mod deploy;
#[path = "../golden_support/mod.rs"]
mod golden_support;
mod liveness;
use volley_testkit::log_capture;
mod membership_authority;
mod messaging;
mod metrics;
#[path = "../raw_peer/mod.rs"]
mod raw_peer;
mod security;
mod settings;
mod soak;
mod watch;
mod wire;
#[path = "../wire_frames/mod.rs"]
mod wire_frames;
