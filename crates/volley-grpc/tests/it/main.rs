//! volley-grpc's integration tests, in one binary (one link instead of
//! one per file). The `reflection` feature's test stays a binary of its
//! own, built only with that feature.

mod calls;
mod client_calls;
#[path = "../common/mod.rs"]
mod common;
mod interop;
#[path = "../interop_messages/mod.rs"]
mod interop_messages;
mod stream_cancel;
mod streaming;
