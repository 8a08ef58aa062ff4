//! The core's packets onto the transport, as datagrams
//! (`Remoting::send_cluster`).
//!
//! A seed node is known by its address alone: the core announces to it
//! with uid 0, and the transport sends only to a connected incarnation.
//! The first send makes the association (and is dropped); the packet is
//! held, one per address and channel, and sent once the handshake names
//! the incarnation, or given up after [`HOLD_FOR`]. Without that the
//! first join would wait for `retry_unsuccessful_join_after` (10 s).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley_remote::wire::Address;
use volley_remote::Remoting;

use crate::node_id::NodeId;
use crate::outbox::{Channel, Packet};
use crate::runtime::inbound::wire_channel;
use crate::runtime::shared::Shared;

/// How long a packet for an address whose incarnation is not known yet is
/// held: a handshake on a live node takes milliseconds.
pub(crate) const HOLD_FOR: Duration = Duration::from_secs(2);

/// How often held packets are tried again.
pub(crate) const RETRY_HELD_EVERY: Duration = Duration::from_millis(20);

/// Sends the core's packets for one node.
pub(crate) struct Outgoing {
    remoting: Remoting,
    system: String,
    shared: Arc<Shared>,
    held: HashMap<(Address, Channel), (Instant, Vec<u8>)>,
}

impl Outgoing {
    pub(crate) fn new(remoting: Remoting, system: String, shared: Arc<Shared>) -> Self {
        Outgoing {
            remoting,
            system,
            shared,
            held: HashMap::new(),
        }
    }

    /// The address of a member (members share this node's system name).
    pub(crate) fn address_of(&self, node: &NodeId) -> Option<Address> {
        Address::new(self.system.as_str(), node.host(), node.port()).ok()
    }

    pub(crate) fn send(&mut self, packets: Vec<Packet>) {
        for packet in packets {
            let Some(to) = self.address_of(&packet.to) else {
                Shared::count(&self.shared.send_drops);
                continue;
            };
            let uid = match packet.to.uid() {
                0 => self.remoting.incarnation_of(&to),
                uid => Some(uid),
            };
            match uid {
                Some(uid) => self.send_one(&to, uid, packet.channel, &packet.bytes),
                None => self.hold(to, packet.channel, packet.bytes),
            }
        }
    }

    fn send_one(&self, to: &Address, uid: u64, channel: Channel, bytes: &[u8]) {
        let sent = self
            .remoting
            .send_cluster(to, uid, wire_channel(channel), bytes);
        if sent.is_ok() {
            Shared::add(&self.shared.gossip_bytes_out, bytes.len());
        }
        if let Err(dropped) = sent {
            // Counted by reason in the transport too; SWIM tolerates loss.
            Shared::count(&self.shared.send_drops);
            tracing::trace!(%to, %dropped, "cluster packet not sent");
        }
    }

    /// Makes the association (this first send is dropped) and keeps the
    /// packet until the incarnation is known. A newer packet for the same
    /// node and channel replaces the held one, which counts as dropped,
    /// and keeps its deadline: a node that never shakes hands (down, or
    /// with another secret) is given up even while joins retry.
    fn hold(&mut self, to: Address, channel: Channel, bytes: Vec<u8>) {
        let _connecting = self
            .remoting
            .send_cluster(&to, 0, wire_channel(channel), &bytes);
        let key = (to, channel);
        let until = match self.held.remove(&key) {
            Some((until, _replaced)) => {
                Shared::count(&self.shared.send_drops);
                until
            }
            None => Instant::now() + HOLD_FOR,
        };
        self.held.insert(key, (until, bytes));
    }

    /// Whether packets are held (the driver then retries them every
    /// [`RETRY_HELD_EVERY`]).
    pub(crate) fn holds_any(&self) -> bool {
        !self.held.is_empty()
    }

    /// Sends the held packets whose incarnation is now known; gives up
    /// those held too long.
    pub(crate) fn retry_held(&mut self) {
        let now = Instant::now();
        let held = std::mem::take(&mut self.held);
        for ((to, channel), (until, bytes)) in held {
            if let Some(uid) = self.remoting.incarnation_of(&to) {
                self.send_one(&to, uid, channel, &bytes);
            } else if now < until {
                self.held.insert((to, channel), (until, bytes));
            } else {
                Shared::count(&self.shared.send_drops);
            }
        }
    }
}
