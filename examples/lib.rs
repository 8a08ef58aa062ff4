//! Runnable examples of volley: see the `[[example]]` entries in Cargo.toml.

pub mod backoff_db_app;
pub mod cluster_workers_app;
pub mod greeter_app;
pub mod http_counter_app;
pub mod job_master_logic;
pub mod otel_app;
pub mod prometheus_app;
pub mod stash_inventory_app;
pub mod streaming_greeter_app;
pub mod web_counter_app;
