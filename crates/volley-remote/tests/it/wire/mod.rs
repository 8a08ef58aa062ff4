//! The wire format: golden vectors, round trips, framing, decoding bad bytes,
//! and serialization.

mod bad_input;
mod features;
mod framing;
mod golden;
mod golden_hot_path;
pub(crate) mod protocol_errors;
mod request_frames;
mod roundtrip;
mod serialization;
mod smoke;
