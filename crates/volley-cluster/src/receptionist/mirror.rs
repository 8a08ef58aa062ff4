//! The cluster receptionist's runtime glue: this node's local
//! registrations go to the driver (and from there into the core's owner
//! set), and the other members' services, as the core reports them, are
//! registered in this node's receptionist as remote refs. So `lookup`,
//! `subscribe`, topics and `Router::group_of` see every member's services
//! with no change to their API.

use std::any::TypeId;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use volley::{ActorSystem, Receptionist, ServiceObserver, ServiceRegistration};
use volley_remote::transport::MirroredService;
use volley_remote::Remoting;

use super::entry::{ServiceChange, ServiceEntry};
use crate::member::ClusterEvent;
use crate::runtime::Command;

/// Hands this node's own registrations to the driver.
pub(crate) struct LocalServices {
    remoting: Remoting,
    /// `host:port`, put into local paths so that other nodes can reach them.
    authority: String,
    commands: mpsc::UnboundedSender<Command>,
    /// Protocols already warned about as not remotable (one warning each).
    warned: Mutex<HashSet<TypeId>>,
}

impl LocalServices {
    /// Makes the receptionist of `system` tell the driver of every local
    /// registration, those made before included.
    pub(crate) fn observe(
        system: &ActorSystem,
        remoting: &Remoting,
        commands: mpsc::UnboundedSender<Command>,
    ) -> Result<(), volley::SpawnError> {
        let address = remoting.address();
        let observer = LocalServices {
            remoting: remoting.clone(),
            authority: format!("{}:{}", address.host(), address.port()),
            commands,
            warned: Mutex::new(HashSet::new()),
        };
        system.receptionist()?.observe(Arc::new(observer));
        Ok(())
    }

    /// The entry for a local service under a remotable key, or `None`
    /// (with one warning per protocol) for a key that stays local.
    fn entry_of(&self, change: &ServiceRegistration) -> Option<ServiceEntry> {
        let Some(wire_type_id) = self.remoting.wire_type_id(change.protocol) else {
            let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
            if warned.insert(change.protocol) {
                tracing::warn!(
                    key = %change.key_id,
                    protocol = change.protocol_name,
                    "service key stays on this node: its protocol is not registered for remoting"
                );
            }
            return None;
        };
        Some(ServiceEntry {
            key: change.key_id.clone(),
            wire_type_id,
            path: Arc::from(
                change
                    .service
                    .path()
                    .to_string_with_authority(&self.authority),
            ),
            uid: change.service.uid(),
        })
    }
}

impl ServiceObserver for LocalServices {
    fn service_changed(&self, change: ServiceRegistration) {
        // Other members' services are registered here by the mirror: they
        // are theirs to replicate.
        if change.service.as_remote().is_some() || change.service.is_reply_handle() {
            return;
        }
        if let Some(entry) = self.entry_of(&change) {
            let registered = change.registered;
            // A closed channel: the driver stopped with the system.
            let _stopped = self.commands.send(Command::Service { entry, registered });
        }
    }
}

/// Registers the other members' services in this node's receptionist.
pub(crate) struct ServiceMirror {
    remoting: Remoting,
    receptionist: Option<Receptionist>,
}

impl ServiceMirror {
    pub(crate) fn new(remoting: &Remoting, system: &ActorSystem) -> Self {
        Self {
            remoting: remoting.clone(),
            // None only while the system terminates, when listings no
            // longer matter.
            receptionist: system.receptionist().ok(),
        }
    }

    /// Carries out the core's changes.
    pub(crate) fn apply(&self, changes: Vec<ServiceChange>) {
        let Some(receptionist) = &self.receptionist else {
            return;
        };
        for change in changes {
            let service = MirroredService {
                key_id: &change.entry.key,
                wire_type_id: change.entry.wire_type_id,
                path: &change.entry.path,
                uid: change.entry.uid,
            };
            let mirrored = self
                .remoting
                .mirror_service(receptionist, service, change.registered);
            if let Err(error) = mirrored {
                tracing::warn!(
                    owner = %change.owner,
                    key = %change.entry.key,
                    "a member's service cannot be listed here: {error}"
                );
            }
        }
    }

    /// Keeps the receptionist's reachable listings in step with the
    /// membership (Akka's `serviceInstances` against
    /// `allServiceInstances`): an unreachable member's services leave
    /// `Listing::services`, and come back when it is reachable again; a
    /// removed member's address is reachable again for whoever comes
    /// next there (its services leave every listing by death watch).
    pub(crate) fn reachability(&self, event: &ClusterEvent) {
        let (member, reachable) = match event {
            ClusterEvent::UnreachableMember { member } => (member, false),
            ClusterEvent::ReachableMember { member }
            | ClusterEvent::MemberRemoved { member, .. } => (member, true),
            _ => return,
        };
        if let Some(receptionist) = &self.receptionist {
            let authority = format!("{}:{}", member.node.host(), member.node.port());
            receptionist.set_reachable(&authority, reachable);
        }
    }
}
