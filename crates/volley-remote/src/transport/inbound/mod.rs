//! The receiving side: accepting connections, reading frames, and handing
//! what they carry to mailboxes.
//!
//! `accept` takes a connection through the accepting half of the
//! handshake; a `reader` then reads it, each buffer's frames in one pass
//! (`frames`) into a sink (`sorting`): user messages go to mailboxes in
//! runs (`delivery`), every other frame to `control_frames`; `peer` is the
//! reader's view of the node on the other end.
//! `stages` times a connection's steps up to its first frame (for the
//! logs). `guard` caps what an inbound connection may cost, `ends` closes the
//! connections of an incarnation that is gone, and `protocol_error` tells
//! a peer that broke the protocol why it is closed.

pub(crate) mod accept;
mod control_frames;
pub(crate) mod delivery;
pub(crate) mod ends;
mod frames;
pub(crate) mod guard;
mod peer;
pub(crate) mod protocol_error;
pub(crate) mod reader;
mod replies;
mod sorting;
mod stages;

use std::sync::Arc;

use volley::{ActorPath, AnyRef};

use crate::transport::admission::AdmissionContext;
use crate::transport::cluster::ClusterContext;
use crate::transport::control::reply_handles::ReplyHandles;
use crate::transport::control::ControlContext;
use crate::transport::inbound::ends::InboundLives;
use crate::transport::outbound::association::Association;
use crate::transport::refs::tables::import_bytes::ImportMeter;
use crate::wire::Address;

/// What the receiving side needs of the rest of the transport: it sits
/// above every other stage (a read can admit, judge, answer, deliver and
/// hand cluster traffic on), and adds its own state and the resolution of what peers declare.
pub(crate) trait InboundContext: AdmissionContext + ControlContext + ClusterContext {
    /// The inbound connections of each incarnation (`ends.rs`).
    fn inbound_lives(&self) -> &InboundLives;
    /// What the refs peers declared on the open connections keep.
    fn import_meter(&self) -> &Arc<ImportMeter>;
    /// The reply handles of this node's asks waiting for remote answers.
    fn reply_handles(&self) -> &ReplyHandles;
    /// What a peer's declaration points at (`RemotingCore::resolve_declared`).
    fn resolve_declared(
        self: &Arc<Self>,
        path: &str,
        uid: u64,
        peer: &Address,
        peer_association: Option<&Arc<Association>>,
        selection: &mut Option<ActorPath>,
    ) -> Option<AnyRef>;
}
