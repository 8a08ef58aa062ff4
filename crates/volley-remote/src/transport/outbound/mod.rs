//! The sending side: the association with each remote node, what a
//! sender does to put a message on the wire, and who takes it from there
//! to a socket.
//!
//! An `association` is this node's state towards one remote node (as in
//! Artery, the outbound side): its lanes, what it knows of the node's
//! incarnations, its system-message buffers and which of its tasks run.
//! A `RemoteRef` hands its message to its `route`, which encodes it into
//! one of its association's `lane`s; a lane's `writer` owns the
//! connection, dials (with `backoff` between failed attempts) and writes
//! whatever the lane has gathered. Nothing here reads from a socket.

pub(crate) mod association;
pub(crate) mod backoff;
pub(crate) mod lane;
pub(crate) mod route;
pub(crate) mod writer;

use std::sync::Arc;

use bytes::BytesMut;
use volley::remote::RemoteSendError;
use volley::{ActorPath, AnyRef};

use crate::transport::events::{DisassociationReason, RemotingEvent};
use crate::transport::handshake::HandshakeContext;
use crate::transport::incarnation::Incarnation;
use crate::transport::outbound::association::system_buffers::SystemKind;
use crate::transport::outbound::association::{
    Association, AssociationId, Associations, Origin, Refusal,
};
use crate::transport::outbound::lane::OutboundLane;
use crate::transport::registry::Registry;
use crate::wire::{Address, Lane};

/// What the sending side needs of the rest of the transport: the layers
/// above it (idleness, liveness, control) answer through here, so that
/// nothing in `outbound/` imports them.
pub(crate) trait OutboundContext: HandshakeContext {
    /// Which Rust types travel under which wire ids.
    fn registry(&self) -> &Registry;
    /// The associations, by remote node.
    fn associations(&self) -> &Associations;
    /// The association to `remote`; a new one started on `origin`'s say.
    fn associate(
        &self,
        remote: &Address,
        origin: Origin,
    ) -> Result<Arc<Association>, RemoteSendError>;
    /// The path under which `actor` is known to other nodes.
    fn export_path(&self, actor: &AnyRef) -> String;
    /// The uid under which `actor` is known to other nodes: an ask's reply
    /// handle is known by its correlation id, never by its uid.
    fn export_uid(&self, actor: &AnyRef) -> u64;
    /// Registers an ask's reply handle declared to the association's node;
    /// returns its correlation id.
    fn register_reply_handle(&self, handle: &AnyRef, association: Option<AssociationId>) -> u64;
    /// Starts an association stopped for idleness again (`idle/`).
    fn revive(&self, association: &Association);
    /// Whether a writer of a stopped association may end (`idle/`).
    fn writer_may_exit(&self, lane: &OutboundLane) -> bool;
    /// Notes a remote watch of `watched` by `watcher`; false if known.
    fn add_outgoing_watch(&self, node: &Address, watched: &AnyRef, watcher: &AnyRef) -> bool;
    /// Forgets a remote watch; false if it was not known.
    fn remove_outgoing_watch(&self, node: &Address, watched: &AnyRef, watcher: &AnyRef) -> bool;
    /// Whether the actor at `path` with `uid` is known to have terminated.
    fn is_known_dead(&self, path: &ActorPath, uid: u64) -> bool;
    /// Sends a system message reliably (`control/system_messages.rs`);
    /// hands its kind back if the node is gone.
    fn send_reliably(
        &self,
        association: &Association,
        kind: SystemKind,
        recipient: AnyRef,
        sender: Option<AnyRef>,
        payload: Vec<u8>,
    ) -> Result<(), SystemKind>;
    /// Writes every unacknowledged system message to a new connection.
    fn resend_unacknowledged(&self, association: &Association, out: &mut BytesMut);
    /// A handshake with incarnation `peer` completed on `lane`: refused if
    /// that incarnation is gone or superseded (`liveness/incarnations.rs`).
    fn incarnation_answered(
        &self,
        association: &Association,
        peer: Incarnation,
        lane: Lane,
    ) -> Result<(), Refusal>;
    /// The peer refused this node (`liveness/incarnations.rs`).
    fn refused_by_peer(&self, association: &Association, reason: DisassociationReason);
    /// The control connection to `association`'s node failed while it was
    /// serving (`liveness/authority.rs`: a hint for the membership
    /// authority, which may suspect the member at once).
    fn control_connection_lost(&self, association: &Association);
    /// Tells the event stream.
    fn publish(&self, event: RemotingEvent);
    /// Whether a failed connection may be warned about now, within the
    /// node's limit across all its lanes.
    fn may_warn_of_failed_connect(&self) -> bool;
}
