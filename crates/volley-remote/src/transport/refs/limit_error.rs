//! What a peer's declarations ran into: the import table's limits
//! (`[remote.limits]`, `settings/limits.rs`).

/// A limit a peer ran into; the connection that carried it is closed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LimitError {
    #[error("the peer declared more than {max} refs on one connection (limits.max_imported_refs)")]
    TooManyImportedRefs { max: usize },
    #[error("the refs the peer declared on one connection would keep over {max} bytes (limits.max_imported_ref_bytes)")]
    ImportedRefBytes { max: usize },
}
