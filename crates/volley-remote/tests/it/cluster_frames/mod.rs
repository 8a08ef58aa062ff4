//! Cluster frames (wire kind `0x40`) on the transport: the hook a cluster
//! installs, what a node does with frames it cannot hand on, and the
//! datagram send (docs/design/cluster.md §2, issue 31 steps 1 and 2).

mod receiving;
mod sending;
mod traffic;

use std::sync::{Arc, Mutex};

use volley_remote::transport::ClusterInbound;
use volley_remote::wire::{Address, ClusterChannel, ClusterFrame, Pdu};

use crate::common::{eventually, Node};

/// One frame as a hook got it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    pub from: Address,
    pub uid: u64,
    pub channel: ClusterChannel,
    pub payload: Vec<u8>,
}

/// A hook that records what it gets.
pub struct Recorder {
    name: String,
    got: Mutex<Vec<Got>>,
}

impl Recorder {
    pub fn new(name: &str) -> Arc<Recorder> {
        Arc::new(Recorder {
            name: name.to_string(),
            got: Mutex::new(Vec::new()),
        })
    }

    pub fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

impl ClusterInbound for Recorder {
    fn cluster_name(&self) -> &str {
        &self.name
    }

    fn receive(&self, from: &Address, uid: u64, channel: ClusterChannel, payload: &[u8]) {
        self.got.lock().unwrap().push(Got {
            from: from.clone(),
            uid,
            channel,
            payload: payload.to_vec(),
        });
    }
}

/// Installs a recorder for cluster `name` on `node`.
pub fn join(node: &Node, name: &str) -> Arc<Recorder> {
    let hook = Recorder::new(name);
    node.remoting.install_cluster_hook(hook.clone()).unwrap();
    hook
}

/// Sends `payload` from `from` to `to` until one is queued: the first
/// ones are dropped while the association's control connection is made.
pub async fn send_until_queued(from: &Node, to: &Node, payload: &[u8]) {
    let (address, uid) = (to.remoting.address().clone(), to.remoting.uid());
    eventually("a cluster frame queued", || {
        from.remoting
            .send_cluster(&address, uid, ClusterChannel::Swim, payload)
            .is_ok()
    })
    .await;
}

/// A whole cluster frame's bytes.
pub fn cluster_frame(cluster: &str, payload: &[u8]) -> bytes::BytesMut {
    let frame = Pdu::Cluster(ClusterFrame {
        channel: ClusterChannel::SyncDigest,
        cluster,
        payload,
    });
    crate::raw_peer::hostile::frames(volley_remote::wire::Lane::Control, &[frame])
}
