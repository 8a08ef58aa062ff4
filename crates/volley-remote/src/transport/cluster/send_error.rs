//! Why `Remoting::send_cluster` dropped a frame.

use crate::transport::cluster::counts::Dropped;
use crate::wire::Address;

/// A cluster frame not sent. Each is counted (`ClusterFrameCounts`); the
/// cluster's protocols tolerate loss, so the caller only notes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterSendError {
    /// No cluster hook is installed: this node is in no cluster.
    #[error("this node is in no cluster (no cluster hook installed)")]
    NotInCluster,
    /// No association can be made to the node (remoting is shut down, or
    /// the table is full).
    #[error("no association to {node}: {reason}")]
    Unavailable {
        /// The node.
        node: Address,
        /// Why.
        reason: String,
    },
    /// The node's last incarnation is gone (unreachable, quarantined or
    /// shut down) and no new one has shaken hands.
    #[error("{node} is down")]
    Down {
        /// The node.
        node: Address,
    },
    /// The control connection to the node is not up (being made, or
    /// redialed); the frame is not queued behind it.
    #[error("the control connection to {node} is not up")]
    Connecting {
        /// The node.
        node: Address,
    },
    /// The node's connected incarnation is not the one the frame is for.
    #[error("{node} is incarnation {connected}, not {wanted}")]
    OtherIncarnation {
        /// The node.
        node: Address,
        /// The incarnation the frame was for.
        wanted: u64,
        /// The incarnation connected.
        connected: u64,
    },
    /// The control lane to the node holds more than `cluster.queue_bytes`
    /// unsent.
    #[error(
        "{queued} bytes wait on the control lane to {node}, past cluster.queue_bytes ({budget})"
    )]
    OverBudget {
        /// The node.
        node: Address,
        /// Bytes queued before the frame.
        queued: usize,
        /// `cluster.queue_bytes`.
        budget: usize,
    },
    /// The frame cannot be encoded (an empty payload, or one too large for
    /// the control lane).
    #[error("cluster frame cannot be encoded: {0}")]
    Invalid(String),
}

impl ClusterSendError {
    /// The reason it is counted under.
    pub(crate) fn reason(&self) -> Dropped {
        match self {
            ClusterSendError::NotInCluster => Dropped::NotInCluster,
            ClusterSendError::Unavailable { .. } => Dropped::Unavailable,
            ClusterSendError::Down { .. } => Dropped::Down,
            ClusterSendError::Connecting { .. } => Dropped::Connecting,
            ClusterSendError::OtherIncarnation { .. } => Dropped::OtherIncarnation,
            ClusterSendError::OverBudget { .. } => Dropped::OverBudget,
            ClusterSendError::Invalid(_) => Dropped::Invalid,
        }
    }
}
