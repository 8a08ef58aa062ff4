//! `Remoting`'s side of cluster traffic (docs/design/cluster.md §2): the
//! hook a cluster installs to receive its frames, and the datagram send.
//! Meant for volley-cluster; an application has no use for them.

use std::sync::Arc;

use crate::transport::cluster::counts::ClusterFrameCounts;
use crate::transport::cluster::hook::{ClusterHookError, ClusterInbound};
use crate::transport::cluster::send::send_cluster;
use crate::transport::cluster::send_error::ClusterSendError;
use crate::transport::remoting::Remoting;
use crate::wire::{Address, ClusterChannel};

impl Remoting {
    /// Makes `hook` receive the cluster frames (wire kind `0x40`) peers
    /// send to this node, and names the cluster this node's own frames
    /// carry. Once per node: a node is in one cluster at most.
    ///
    /// Until a hook is installed, cluster frames are counted as ignored
    /// and their connections kept.
    pub fn install_cluster_hook(
        &self,
        hook: Arc<dyn ClusterInbound>,
    ) -> Result<(), ClusterHookError> {
        self.core.cluster.install(hook)
    }

    /// Sends `payload` on `channel` to incarnation `uid` of the node at
    /// `to`, as a datagram: queued on the control lane if the connection
    /// to that incarnation is up and the lane holds at most
    /// `cluster.queue_bytes` unsent, else dropped (counted, and the
    /// reason returned). Makes the association if there is none (the
    /// cluster names the address, as the application's own code would),
    /// so a first frame to a node is dropped while its connection is
    /// made.
    pub fn send_cluster(
        &self,
        to: &Address,
        uid: u64,
        channel: ClusterChannel,
        payload: &[u8],
    ) -> Result<(), ClusterSendError> {
        send_cluster(&*self.core, to, uid, channel, payload)
    }

    /// The incarnation uid of the node at `node` that this node's
    /// association has shaken hands with, if any: what `send_cluster`
    /// needs for a node known by its address alone (a seed node), once a
    /// first, dropped, frame has made the association.
    pub fn incarnation_of(&self, node: &Address) -> Option<u64> {
        let association = self.core.associations.find(node)?;
        let uid = crate::transport::support::lock(&association.control).uid;
        uid
    }

    /// What became of this node's cluster frames so far, both ways.
    pub fn cluster_frame_counts(&self) -> ClusterFrameCounts {
        self.core.cluster.counts.snapshot()
    }
}
