//! volley-grpc's integration tests, in one binary (one link instead of
//! one per file). The crate's tests build it with the `reflection`
//! feature (a dev-dependency on itself), so its test runs here too.

mod calls;
mod client_calls;
#[path = "../common/mod.rs"]
mod common;
mod echo_server;
mod hostile;
mod interop;
#[path = "../interop_messages/mod.rs"]
mod interop_messages;
mod limits;
mod reflection;
mod stream_cancel;
mod streaming;
