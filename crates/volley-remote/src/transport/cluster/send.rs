//! Sending a cluster frame with datagram semantics: queued on the
//! control lane only when the connection to the intended incarnation is
//! up and the lane holds little, else dropped and counted. SWIM
//! tolerates loss, not queues that grow while a node is away; and a
//! cluster frame must never be what overflows the control queue, whose
//! overflow quarantines.

use crate::transport::cluster::send_error::ClusterSendError;
use crate::transport::cluster::ClusterContext;
use crate::transport::outbound::association::{Association, Origin};
use crate::transport::outbound::lane::DatagramRefusal;
use crate::transport::support::lock;
use crate::wire::{Address, ClusterChannel, ClusterFrame, Lane, Pdu};

/// Sends `payload` to incarnation `uid` of the node at `to`, or drops it
/// (counted by reason). The association is made if there is none: the
/// cluster names the address itself, as this node's own code does.
pub(crate) fn send_cluster(
    core: &(impl ClusterContext + ?Sized),
    to: &Address,
    uid: u64,
    channel: ClusterChannel,
    payload: &[u8],
) -> Result<(), ClusterSendError> {
    let port = core.cluster_port();
    let outcome = try_send(core, to, uid, channel, payload);
    match &outcome {
        Ok(()) => port.counts.sent(),
        Err(e) => port.counts.dropped(e.reason()),
    }
    outcome
}

fn try_send(
    core: &(impl ClusterContext + ?Sized),
    to: &Address,
    uid: u64,
    channel: ClusterChannel,
    payload: &[u8],
) -> Result<(), ClusterSendError> {
    let hook = core
        .cluster_port()
        .hook()
        .ok_or(ClusterSendError::NotInCluster)?;
    let association =
        core.associate(to, Origin::Vouched)
            .map_err(|e| ClusterSendError::Unavailable {
                node: to.clone(),
                reason: e.to_string(),
            })?;
    ready_for(core, &association, uid)?;
    let frame = Pdu::Cluster(ClusterFrame {
        channel,
        cluster: hook.cluster_name(),
        payload,
    });
    let budget = core.settings().cluster.queue_bytes;
    match association
        .lane(Lane::Control)
        .send_datagram(&frame, budget)
    {
        Ok(()) => Ok(()),
        Err(DatagramRefusal::OverBudget { queued }) => Err(ClusterSendError::OverBudget {
            node: to.clone(),
            queued,
            budget,
        }),
        Err(DatagramRefusal::Encode(e)) => Err(ClusterSendError::Invalid(e.to_string())),
    }
}

/// Whether a frame for incarnation `uid` may be queued now: the node is
/// not down, its control connection is up, and with that incarnation. A
/// stopped association is started again, and this frame dropped.
fn ready_for(
    core: &(impl ClusterContext + ?Sized),
    association: &Association,
    uid: u64,
) -> Result<(), ClusterSendError> {
    let node = || association.remote.clone();
    if association.is_down() {
        return Err(ClusterSendError::Down { node: node() });
    }
    let control = association.lane(Lane::Control);
    if control.is_retired() {
        core.revive(association);
        return Err(ClusterSendError::Connecting { node: node() });
    }
    let connected = lock(&association.control).uid;
    match connected {
        Some(connected) if connected != uid => Err(ClusterSendError::OtherIncarnation {
            node: node(),
            wanted: uid,
            connected,
        }),
        Some(_) if control.is_connected() => Ok(()),
        _ => Err(ClusterSendError::Connecting { node: node() }),
    }
}
