//! The examples' tests, in one binary: each module runs its example's
//! application code and checks what it does.

mod backoff_db;
mod cluster_workers;
#[path = "../common/mod.rs"]
mod common;
mod greeter;
mod http_counter;
mod job_master;
mod otel;
mod prometheus;
mod stash_inventory;
mod streaming_greeter;
mod web_counter;
