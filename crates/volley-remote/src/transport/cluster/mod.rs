//! Cluster traffic on the transport (docs/design/cluster.md §2): the
//! frames of membership and anti-entropy, which volley-cluster produces
//! and consumes, carried on the control lane.
//!
//! `hook` is what the cluster installs to receive them (`ClusterInbound`),
//! `port` the node's slot for it and its counts, `receive` what a reader
//! does with a frame (who may send one, at what rate), `rate` the
//! per-connection token bucket, `send` the datagram send (`send_error`, why it dropped one), `counts` what
//! is dropped or refused, by reason, and its metrics. A node with no hook
//! installed pays nothing on any path but that of a cluster frame.

pub(crate) mod counts;
pub(crate) mod hook;
pub(crate) mod port;
pub(crate) mod rate;
pub(crate) mod receive;
pub(crate) mod send;
pub(crate) mod send_error;

use crate::transport::cluster::port::ClusterPort;
use crate::transport::outbound::OutboundContext;

/// What cluster traffic needs of the rest of the transport: sending goes
/// through associations (`outbound/`), and the node keeps the hook.
pub(crate) trait ClusterContext: OutboundContext {
    /// The cluster's hook, if installed, and the counts of its frames.
    fn cluster_port(&self) -> &ClusterPort;
}
