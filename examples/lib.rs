//! Runnable examples of volley: see the `[[example]]` entries in Cargo.toml.
