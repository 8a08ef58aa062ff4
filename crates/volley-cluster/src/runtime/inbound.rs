//! The hook volley-remote hands this node's cluster frames to: it only
//! copies a frame into the driver's bounded queue, and drops and counts
//! it when the queue is full, so a reader never waits on cluster work.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use tokio::sync::mpsc;
use volley_remote::transport::ClusterInbound;
use volley_remote::wire::{Address, ClusterChannel};

use crate::outbox::Channel;

/// One cluster frame from a peer, as its connection's handshake named it.
pub(crate) struct Received {
    pub(crate) from: Address,
    pub(crate) uid: u64,
    pub(crate) channel: Channel,
    pub(crate) payload: Vec<u8>,
}

/// The installed hook.
pub(crate) struct InboundHook {
    name: String,
    queue: mpsc::Sender<Received>,
    dropped: Arc<AtomicU64>,
}

impl InboundHook {
    /// A hook for the cluster `name` feeding `queue`; `dropped` counts the
    /// frames a full queue refused.
    pub(crate) fn new(
        name: String,
        queue: mpsc::Sender<Received>,
        dropped: Arc<AtomicU64>,
    ) -> Self {
        InboundHook {
            name,
            queue,
            dropped,
        }
    }
}

/// The core's channel for a wire channel.
pub(crate) fn channel_of(channel: ClusterChannel) -> Channel {
    match channel {
        ClusterChannel::Swim => Channel::Swim,
        ClusterChannel::SyncDigest => Channel::SyncDigest,
        ClusterChannel::SyncData => Channel::SyncData,
    }
}

/// The wire channel for a core's channel.
pub(crate) fn wire_channel(channel: Channel) -> ClusterChannel {
    match channel {
        Channel::Swim => ClusterChannel::Swim,
        Channel::SyncDigest => ClusterChannel::SyncDigest,
        Channel::SyncData => ClusterChannel::SyncData,
    }
}

impl ClusterInbound for InboundHook {
    fn cluster_name(&self) -> &str {
        &self.name
    }

    fn receive(&self, from: &Address, uid: u64, channel: ClusterChannel, payload: &[u8]) {
        let frame = Received {
            from: from.clone(),
            uid,
            channel: channel_of(channel),
            payload: payload.to_vec(),
        };
        // Full (the driver is behind) or closed (it stopped): SWIM
        // tolerates loss, a reader must not wait.
        if self.queue.try_send(frame).is_err() {
            self.dropped.fetch_add(1, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;

    use tokio::sync::mpsc;
    use volley_remote::transport::ClusterInbound;
    use volley_remote::wire::{Address, ClusterChannel};

    use super::InboundHook;
    use crate::outbox::Channel;

    #[test]
    fn a_full_queue_drops_and_counts_without_waiting() {
        let (queue, mut frames) = mpsc::channel(1);
        let dropped = Arc::new(AtomicU64::new(0));
        let hook = InboundHook::new("c".to_owned(), queue, dropped.clone());
        let from = Address::new("sys", "127.0.0.1", 2552).unwrap();
        hook.receive(&from, 7, ClusterChannel::SyncDigest, &[1, 2]);
        hook.receive(&from, 7, ClusterChannel::Swim, &[3]);
        assert_eq!(dropped.load(Relaxed), 1);
        let kept = frames.try_recv().unwrap();
        assert_eq!(
            (kept.uid, kept.channel, kept.payload),
            (7, Channel::SyncDigest, vec![1, 2])
        );
        assert_eq!(hook.cluster_name(), "c");
    }
}
