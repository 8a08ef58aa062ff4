//! Runnable examples of volley: see the `[[example]]` entries in Cargo.toml.

pub mod http_counter_app;
pub mod job_master_logic;
