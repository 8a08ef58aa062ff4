//! A fake node for testing a stage alone, the way Artery tests a stage
//! against its `TestContext`: the state a stage reads is real (an
//! association table, failure detectors, settings), and what it asks of
//! the other layers is recorded instead of done.

use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use tokio::task::JoinHandle;
use volley::remote::RemoteSendError;
use volley::{ActorPath, ActorSystem, AnyRef, DeadLetterReason};

use crate::transport::events::{DisassociationReason, RemotingEvent};
use crate::transport::handshake::auth::Secret;
use crate::transport::handshake::tls::TlsContext;
use crate::transport::handshake::trust::Trust;
use crate::transport::handshake::HandshakeContext;
use crate::transport::incarnation::Incarnation;
use crate::transport::liveness::authority::{
    MemberReport, MemberVerdicts, Membership, MembershipAuthority,
};
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
use crate::transport::registry::Registry;
use crate::transport::settings::RemoteSettings;
use crate::transport::support::lock;
use crate::wire::{Address, Lane};

/// What a stage asked of the layers a fake node does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    Published(RemotingEvent),
    EndInbound(Address, u64),
    EndWatches(Address),
    DeadLetter(Address),
    Revive(Address),
}

/// A node with real tables and recorded requests.
pub(crate) struct FakeNode {
    system: ActorSystem,
    settings: RemoteSettings,
    address: Address,
    registry: Registry,
    associations: Associations,
    reachability: Reachability,
    trust: Trust,
    membership: Membership,
    asked: Mutex<Vec<Asked>>,
}

impl FakeNode {
    /// A node named `fake` on 127.0.0.1:2552. Needs a tokio runtime
    /// entered, for the actor system.
    pub(crate) fn new() -> Self {
        Self::with_settings(RemoteSettings::default())
    }

    /// [`new`](Self::new), with `settings`.
    pub(crate) fn with_settings(settings: RemoteSettings) -> Self {
        let system = ActorSystem::with_settings("fake", volley::Settings::default())
            .expect("an actor system");
        FakeNode {
            system,
            address: Address::new("fake", "127.0.0.1", 2552).expect("an address"),
            registry: Registry::default(),
            associations: Associations::new(),
            reachability: Reachability::new(
                &settings.failure_detector,
                std::time::Duration::from_secs(1),
            ),
            trust: Trust::new(&settings.trust, false),
            membership: Membership::default(),
            settings,
            asked: Mutex::new(Vec::new()),
        }
    }

    /// Switches the membership authority mode on, with `authority`.
    pub(crate) fn with_authority(self, authority: Arc<dyn MembershipAuthority>) -> Self {
        self.membership.set(authority).expect("set once");
        self
    }

    /// What was asked so far, and forgets it.
    pub(crate) fn take_asked(&self) -> Vec<Asked> {
        std::mem::take(&mut *lock(&self.asked))
    }

    fn ask(&self, what: Asked) {
        lock(&self.asked).push(what);
    }
}

impl NodeContext for FakeNode {
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
        1
    }
    fn stamp(&self) -> u64 {
        1
    }
    fn is_shut_down(&self) -> bool {
        false
    }
    fn count_dead_letter(&self, peer: &Address, _reason: DeadLetterReason) {
        self.ask(Asked::DeadLetter(peer.clone()));
    }
    fn undeliverable(&self, peer: &Address, _why: Undeliverable) {
        self.ask(Asked::DeadLetter(peer.clone()));
    }
    fn track(&self, task: JoinHandle<()>) {
        task.abort();
    }
}

impl HandshakeContext for FakeNode {
    fn secret(&self) -> Option<&Secret> {
        None
    }
    fn tls(&self) -> Option<&TlsContext> {
        None
    }
    fn trust(&self) -> &Trust {
        &self.trust
    }
}

impl OutboundContext for FakeNode {
    fn registry(&self) -> &Registry {
        &self.registry
    }
    fn associations(&self) -> &Associations {
        &self.associations
    }
    /// An association with no tasks: nothing dials.
    fn associate(
        &self,
        remote: &Address,
        _origin: Origin,
    ) -> Result<Arc<Association>, RemoteSendError> {
        self.associations
            .get_or_create(remote, &self.settings, |_| {})
    }
    fn export_path(&self, actor: &AnyRef) -> String {
        actor.path().to_string_with_authority("127.0.0.1:2552")
    }
    fn export_uid(&self, actor: &AnyRef) -> u64 {
        actor.uid()
    }
    fn register_reply_handle(&self, _handle: &AnyRef, _association: Option<AssociationId>) -> u64 {
        0
    }
    fn revive(&self, association: &Association) {
        self.ask(Asked::Revive(association.remote.clone()));
    }
    fn writer_may_exit(&self, _lane: &OutboundLane) -> bool {
        true
    }
    fn add_outgoing_watch(&self, _node: &Address, _watched: &AnyRef, _watcher: &AnyRef) -> bool {
        true
    }
    fn remove_outgoing_watch(&self, _node: &Address, _watched: &AnyRef, _watcher: &AnyRef) -> bool {
        true
    }
    fn is_known_dead(&self, _path: &ActorPath, _uid: u64) -> bool {
        false
    }
    fn send_reliably(
        &self,
        _association: &Association,
        kind: SystemKind,
        _recipient: AnyRef,
        _sender: Option<AnyRef>,
        _payload: Vec<u8>,
    ) -> Result<(), SystemKind> {
        Err(kind)
    }
    fn resend_unacknowledged(&self, _association: &Association, _out: &mut BytesMut) {}
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
        self.ask(Asked::Published(event));
    }
    fn may_warn_of_failed_connect(&self) -> bool {
        true
    }
}

impl LivenessContext for FakeNode {
    fn reachability(&self) -> &Reachability {
        &self.reachability
    }
    fn end_inbound_connections(&self, node: &Address, uid: u64) {
        self.ask(Asked::EndInbound(node.clone(), uid));
    }
    fn end_watches_of_node(&self, node: &Address) -> usize {
        self.ask(Asked::EndWatches(node.clone()));
        0
    }
    fn may_stop_heartbeats(&self, _control: &OutboundLane) -> bool {
        true
    }
    fn membership_authority(&self) -> Option<&dyn MembershipAuthority> {
        self.membership.get()
    }
}

/// A membership authority whose members are a fixed list of uids, and
/// which records what it is told.
#[derive(Default)]
pub(crate) struct RecordingAuthority {
    pub(crate) members: Vec<u64>,
    reports: Mutex<Vec<(Address, u64, MemberReport)>>,
}

impl RecordingAuthority {
    /// An authority whose members are the incarnations `members`.
    pub(crate) fn of(members: &[u64]) -> Arc<Self> {
        Arc::new(RecordingAuthority {
            members: members.to_vec(),
            reports: Mutex::default(),
        })
    }

    /// What it was told so far, and forgets it.
    pub(crate) fn take_reports(&self) -> Vec<(Address, u64, MemberReport)> {
        std::mem::take(&mut *lock(&self.reports))
    }
}

impl MembershipAuthority for RecordingAuthority {
    fn is_member(&self, _address: &Address, uid: u64) -> bool {
        self.members.contains(&uid)
    }
    fn report(&self, address: &Address, uid: u64, report: MemberReport) {
        lock(&self.reports).push((address.clone(), uid, report));
    }
}
