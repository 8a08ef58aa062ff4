//! Runnable examples of volley: see the `[[example]]` entries in Cargo.toml.

pub mod job_master_logic;
