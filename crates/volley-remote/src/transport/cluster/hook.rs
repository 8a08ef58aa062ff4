//! `ClusterInbound`: what a cluster implementation installs on a node to
//! receive the cluster frames its peers send.

use crate::wire::{Address, ClusterChannel};

/// Receives this node's cluster traffic; installed once per node with
/// `Remoting::install_cluster_hook`.
///
/// Called on the reader of the connection the frame came on, so it must
/// never block nor do the cluster's work there: it only enqueues (into a
/// bounded queue of the cluster's own, dropping and counting when that is
/// full). Every other frame of that connection waits while it runs.
pub trait ClusterInbound: Send + Sync + 'static {
    /// The name of the cluster this node belongs to: frames naming
    /// another are refused before they reach [`Self::receive`].
    fn cluster_name(&self) -> &str;

    /// A frame from the node at `from`, incarnation `uid` (as its
    /// connection's handshake established them), for this node's cluster.
    /// `payload` is borrowed from the read buffer: copy what is kept.
    fn receive(&self, from: &Address, uid: u64, channel: ClusterChannel, payload: &[u8]);
}

/// Why a hook was not installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterHookError {
    /// A hook is installed already; a node is in at most one cluster.
    #[error("a cluster hook is installed already (for cluster {installed:?})")]
    AlreadyInstalled {
        /// The name of the installed hook's cluster.
        installed: String,
    },
}
