//! `RemotingCore` as each stage sees it: one implementation of each
//! stage's context trait. A method here only hands a stage what it asks
//! for, or passes a request on to the stage that owns it.

use tokio::task::JoinHandle;
use volley::{ActorSystem, DeadLetterReason};

use crate::transport::core::RemotingCore;
use crate::transport::handshake::auth::Secret;
use crate::transport::handshake::tls::TlsContext;
use crate::transport::handshake::HandshakeContext;
use crate::transport::node::NodeContext;
use crate::transport::settings::RemoteSettings;
use crate::wire::Address;

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
    fn authority(&self) -> &str {
        &self.authority
    }
    fn uid(&self) -> u64 {
        self.uid
    }
    fn is_shut_down(&self) -> bool {
        RemotingCore::is_shut_down(self)
    }
    fn count_dead_letter(&self, peer: &Address, reason: DeadLetterReason) {
        RemotingCore::count_dead_letter(self, peer, reason)
    }
    fn undeliverable(&self, peer: &Address, why: &str) {
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
}
