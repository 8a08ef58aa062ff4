//! `RemotingCore` as each stage sees it: one implementation of each
//! stage's context trait. A method here only hands a stage what it asks
//! for, or passes a request on to the stage that owns it.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::task::JoinHandle;
use volley::remote::{RemoteRef, RemoteSendError};
use volley::{ActorPath, ActorSystem, AnyRef, DeadLetterReason};

use crate::transport::admission::probe::Probes;
use crate::transport::admission::AdmissionContext;
use crate::transport::cluster::port::ClusterPort;
use crate::transport::cluster::ClusterContext;
use crate::transport::control::flush::Flushes;
use crate::transport::control::remote_spawn::SpawnRequests;
use crate::transport::control::remote_watch::{DeadActors, RemoteWatches};
use crate::transport::control::reply_handles::ReplyHandles;
use crate::transport::control::system_messages::SystemMessages;
use crate::transport::control::ControlContext;
use crate::transport::core::RemotingCore;
use crate::transport::events::{DisassociationReason, RemotingEvent};
use crate::transport::handshake::auth::Secret;
use crate::transport::handshake::tls::TlsContext;
use crate::transport::handshake::trust::Trust;
use crate::transport::handshake::HandshakeContext;
use crate::transport::idle::{IdleContext, Idleness};
use crate::transport::inbound::ends::{InboundEnds, InboundLives};
use crate::transport::inbound::InboundContext;
use crate::transport::incarnation::Incarnation;
use crate::transport::liveness::authority::{MemberReport, MemberVerdicts, MembershipAuthority};
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::liveness::reachability::Reachability;
use crate::transport::liveness::LivenessContext;
use crate::transport::node::{NodeContext, Undeliverable};
use crate::transport::outbound::association::system_buffers::SystemKind;
use crate::transport::outbound::association::{
    Association, AssociationId, Associations, Origin, Refusal,
};
use crate::transport::outbound::lane::OutboundLane;
use crate::transport::outbound::OutboundContext;
use crate::transport::refs::tables::import_bytes::ImportMeter;
use crate::transport::refs::tables::is_local_reply_handle;
use crate::transport::registry::Registry;
use crate::transport::settings::RemoteSettings;
use crate::wire::{Address, Lane};

impl NodeContext for RemotingCore {
    fn system(&self) -> &ActorSystem {
        &self.system
    }
    fn settings(&self) -> &RemoteSettings {
        &self.settings
    }
    fn address(&self) -> &Address {
        &self.address
    }
    fn uid(&self) -> u64 {
        self.uid
    }
    fn stamp(&self) -> u64 {
        self.stamp
    }
    fn is_shut_down(&self) -> bool {
        RemotingCore::is_shut_down(self)
    }
    fn count_dead_letter(&self, peer: &Address, reason: DeadLetterReason) {
        RemotingCore::count_dead_letter(self, peer, reason)
    }
    fn undeliverable(&self, peer: &Address, why: Undeliverable) {
        RemotingCore::undeliverable(self, peer, why)
    }
    fn track(&self, task: JoinHandle<()>) {
        RemotingCore::track(self, task)
    }
}

impl HandshakeContext for RemotingCore {
    fn secret(&self) -> Option<&Secret> {
        self.secret.as_ref()
    }
    fn tls(&self) -> Option<&TlsContext> {
        self.tls.as_ref()
    }
    fn trust(&self) -> &Trust {
        &self.trust
    }
}

impl OutboundContext for RemotingCore {
    fn registry(&self) -> &Registry {
        &self.registry
    }
    fn associations(&self) -> &Associations {
        &self.associations
    }
    fn associate(
        &self,
        remote: &Address,
        origin: Origin,
    ) -> Result<Arc<Association>, RemoteSendError> {
        RemotingCore::associate(self, remote, origin)
    }
    fn export_path(&self, actor: &AnyRef) -> String {
        RemotingCore::export_path(self, actor)
    }
    fn export_uid(&self, actor: &AnyRef) -> u64 {
        if is_local_reply_handle(actor) {
            self.reply_handles.correlation_of(actor)
        } else {
            actor.uid()
        }
    }
    fn register_reply_handle(&self, handle: &AnyRef, association: Option<AssociationId>) -> u64 {
        self.reply_handles.register(handle, association)
    }
    fn revive(&self, association: &Association) {
        Idleness::start_again(self, association)
    }
    fn writer_may_exit(&self, lane: &OutboundLane) -> bool {
        Idleness::writer_may_end(self, lane)
    }
    fn add_outgoing_watch(&self, node: &Address, watched: &AnyRef, watcher: &AnyRef) -> bool {
        self.remote_watches.add_outgoing(node, watched, watcher)
    }
    fn remove_outgoing_watch(&self, node: &Address, watched: &AnyRef, watcher: &AnyRef) -> bool {
        self.remote_watches.remove_outgoing(node, watched, watcher)
    }
    fn is_known_dead(&self, path: &ActorPath, uid: u64) -> bool {
        self.dead_actors.contains(path, uid)
    }
    fn send_reliably(
        &self,
        association: &Association,
        kind: SystemKind,
        recipient: AnyRef,
        sender: Option<AnyRef>,
        payload: Vec<u8>,
    ) -> Result<(), SystemKind> {
        SystemMessages::send_system_message(self, association, kind, recipient, sender, payload)
    }
    fn resend_unacknowledged(&self, association: &Association, out: &mut BytesMut) {
        SystemMessages::resend_system_messages(self, association, out)
    }
    fn incarnation_answered(
        &self,
        association: &Association,
        peer: Incarnation,
        lane: Lane,
    ) -> Result<(), Refusal> {
        Incarnations::handshake_seen(self, association, peer, lane)
    }
    fn refused_by_peer(&self, association: &Association, reason: DisassociationReason) {
        Incarnations::peer_left_for(self, association, reason)
    }
    fn control_connection_lost(&self, association: &Association) {
        self.reported_to_authority(association, MemberReport::ConnectionLost);
    }
    fn publish(&self, event: RemotingEvent) {
        self.system.event_stream().publish(event);
    }
    fn may_warn_of_failed_connect(&self) -> bool {
        self.connect_warnings.allow()
    }
}

impl LivenessContext for RemotingCore {
    fn reachability(&self) -> &Reachability {
        &self.reachability
    }
    fn end_inbound_connections(&self, node: &Address, uid: u64) {
        InboundEnds::end_inbound(self, node, uid)
    }
    fn end_watches_of_node(&self, node: &Address) -> usize {
        self.remote_watches.address_terminated(node)
    }
    fn may_stop_heartbeats(&self, control: &OutboundLane) -> bool {
        Idleness::heartbeat_may_end(self, control)
    }
    fn membership_authority(&self) -> Option<&dyn MembershipAuthority> {
        self.membership.get()
    }
}

impl ControlContext for RemotingCore {
    fn flushes(&self) -> &Flushes {
        &self.flushes
    }
    fn spawns(&self) -> &SpawnRequests {
        &self.spawns
    }
    fn remote_watches(&self) -> &RemoteWatches {
        &self.remote_watches
    }
    fn dead_actors(&self) -> &DeadActors {
        &self.dead_actors
    }
    fn association(&self, remote: &Address) -> Result<Arc<Association>, RemoteSendError> {
        RemotingCore::association(self, remote)
    }
    fn remote_ref(
        self: &Arc<Self>,
        path: ActorPath,
        uid: u64,
        association: Option<Arc<Association>>,
    ) -> Arc<RemoteRef> {
        RemotingCore::remote_ref(self, path, uid, association)
    }
}

impl AdmissionContext for RemotingCore {
    fn probes(&self) -> &Probes {
        &self.probes
    }
}

impl InboundContext for RemotingCore {
    fn inbound_lives(&self) -> &InboundLives {
        &self.inbound_lives
    }
    fn import_meter(&self) -> &Arc<ImportMeter> {
        &self.import_meter
    }
    fn reply_handles(&self) -> &ReplyHandles {
        &self.reply_handles
    }
    fn resolve_declared(
        self: &Arc<Self>,
        path: &str,
        uid: u64,
        peer: &Address,
        peer_association: Option<&Arc<Association>>,
        selection: &mut Option<ActorPath>,
    ) -> Option<AnyRef> {
        RemotingCore::resolve_declared(self, path, uid, peer, peer_association, selection)
    }
}

impl ClusterContext for RemotingCore {
    fn cluster_port(&self) -> &ClusterPort {
        &self.cluster
    }
}

impl IdleContext for RemotingCore {
    fn owned(&self) -> Option<Arc<Self>> {
        self.me.upgrade()
    }
}
