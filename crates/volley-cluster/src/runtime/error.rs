//! Why a cluster did not start, or refused a request.

use volley_remote::transport::{AuthorityAlreadySet, ClusterHookError};
use volley_remote::wire::AddressError;

use crate::sbr::SbrSettingsError;

/// What went wrong with the cluster of a node.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The `[cluster]` section does not parse.
    #[error("invalid [cluster] settings: {0}")]
    InvalidSettings(String),
    /// A `[cluster]` setting is out of its range.
    #[error("[cluster] {key} {reason}")]
    OutOfRange {
        /// The key, as written in the section.
        key: &'static str,
        /// What it must be.
        reason: &'static str,
    },
    /// `[cluster.split_brain_resolver]` names an unknown strategy, or
    /// lacks what its strategy needs.
    #[error("[cluster.split_brain_resolver]: {0}")]
    SplitBrainResolver(#[from] SbrSettingsError),
    /// A seed node is not an address (`volley://system@host:port`).
    #[error("seed node {seed:?} is not an address: {source}")]
    BadSeedNode {
        /// The seed as written.
        seed: String,
        /// Why it does not parse.
        #[source]
        source: AddressError,
    },
    /// An address to join belongs to another actor system: a cluster's
    /// members share their system's name, as in Akka.
    #[error("{address} is not a node of actor system {system:?}")]
    OtherSystem {
        /// The address.
        address: String,
        /// This node's system name.
        system: String,
    },
    /// This node is in a cluster already (its remoting holds a cluster
    /// hook or a membership authority).
    #[error("this node is in a cluster already: {0}")]
    AlreadyStarted(String),
    /// The actor system is terminating or terminated.
    #[error("the actor system is terminated")]
    SystemTerminated,
    /// The cluster's driver task has stopped (the system terminated).
    #[error("the cluster of this node has stopped")]
    Stopped,
}

impl From<ClusterHookError> for ClusterError {
    fn from(e: ClusterHookError) -> Self {
        ClusterError::AlreadyStarted(e.to_string())
    }
}

impl From<AuthorityAlreadySet> for ClusterError {
    fn from(e: AuthorityAlreadySet) -> Self {
        ClusterError::AlreadyStarted(e.to_string())
    }
}
