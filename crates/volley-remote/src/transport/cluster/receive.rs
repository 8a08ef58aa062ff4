//! A cluster frame a reader took off a connection: to the hook, or
//! counted with the reason it is not.

use std::time::Instant;

use crate::transport::cluster::counts::Refused;
use crate::transport::cluster::rate::InboundRate;
use crate::transport::cluster::ClusterContext;
use crate::transport::support::log_limited;
use crate::wire::{Address, ClusterFrame};

/// The connection a cluster frame came on, as its reader knows it.
pub(crate) struct Sender<'a> {
    /// The node, as its handshake named it.
    pub(crate) address: &'a Address,
    /// Its incarnation, from the handshake.
    pub(crate) uid: u64,
    /// Whether this node dials it back (it has an association here).
    pub(crate) dialed_back: bool,
}

/// Hands `frame` to the installed hook, or counts why not: no hook (the
/// connection is kept, since a node may be in no cluster), over the
/// connection's `rate` (made on the first frame), a peer not dialed back
/// (as its system messages are refused), or another cluster's name.
pub(crate) fn receive(
    core: &(impl ClusterContext + ?Sized),
    from: Sender<'_>,
    rate: &mut Option<InboundRate>,
    frame: ClusterFrame<'_>,
) {
    let port = core.cluster_port();
    let peer = from.address;
    let Some(hook) = port.hook() else {
        port.counts.ignored();
        log_limited!(warn, %peer, cluster = frame.cluster, "cluster frame, but this node is in no cluster; ignored");
        return;
    };
    // First, so that a flood costs a count each, whatever it would be
    // refused for.
    let now = Instant::now();
    let rate = rate.get_or_insert_with(|| InboundRate::new(&core.settings().cluster, now));
    if !rate.allow(now) {
        port.counts.refused(Refused::RateLimited);
        log_limited!(warn, %peer, "cluster frames over remote.cluster.inbound_frames_per_second; dropped");
        return;
    }
    if !from.dialed_back {
        port.counts.refused(Refused::NotDialedBack);
        let why = "a cluster frame from a peer this node does not dial back";
        return core.trust().refused(core, peer, why);
    }
    let ours = hook.cluster_name();
    if frame.cluster != ours {
        port.counts.refused(Refused::ForeignCluster);
        log_limited!(warn, %peer, theirs = frame.cluster, ours, "cluster frame from another cluster; refused");
        return;
    }
    port.counts.delivered();
    hook.receive(peer, from.uid, frame.channel, frame.payload);
}
