//! The redb store of remembered entities (cargo feature `redb-store`):
//! it answers as the in-memory model over random operations, keeps
//! everything across a reopen and a killed process, and refuses a
//! damaged, foreign or already-open file with a typed error.

mod files;
mod model;
mod processes;
