//! Hostile peers and protection: the shared secret, dial-back and trust,
//! limits, TLS, and bad input.

mod auth;
mod bad_input;
mod claims;
mod dial_back;
mod drop_warnings;
mod limits;
mod tls;
mod tls_more;
mod trust;
