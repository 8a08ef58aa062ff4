//! `Remoting`'s side of a cluster receptionist (docs/design/cluster.md
//! §5): across nodes a service key is named by its id and the wire type
//! id of its protocol, since a `TypeId` is not portable; these methods
//! turn a local key's protocol into that id, and a replicated entry back
//! into a typed remote ref registered in this node's receptionist. Meant
//! for volley-cluster.

use std::any::TypeId;

use volley::Receptionist;

use crate::transport::errors::ResolveError;
use crate::transport::remoting::Remoting;

/// Why a replicated service could not be mirrored here.
#[derive(Debug, thiserror::Error)]
pub enum MirrorServiceError {
    /// No protocol is registered under the entry's wire type id on this
    /// node.
    #[error("no protocol is registered under wire type id {0}")]
    UnknownWireType(u32),
    /// The entry's path is not a remote actor path.
    #[error(transparent)]
    Path(#[from] ResolveError),
}

/// A service another node registered, as its cluster replicated it.
#[derive(Debug, Clone, Copy)]
pub struct MirroredService<'a> {
    /// The key's id.
    pub key_id: &'a str,
    /// The wire type id of the key's protocol.
    pub wire_type_id: u32,
    /// The service's full path (`volley://system@host:port/user/a`).
    pub path: &'a str,
    /// The service's incarnation uid.
    pub uid: u64,
}

impl Remoting {
    /// The wire type id `protocol` is registered under for remoting, if it
    /// is.
    pub fn wire_type_id(&self, protocol: TypeId) -> Option<u32> {
        let registry = &self.core.registry;
        let at = *registry.by_type.get(&protocol)?;
        Some(registry.outbound[at].1.wire_id)
    }

    /// Registers in `receptionist` (or, with `registered` false,
    /// deregisters) the remote `service` under its key, typed with the
    /// protocol registered under its wire type id. The receptionist
    /// watches the ref, so the node's removal (or the actor's stop) also
    /// takes it out.
    pub fn mirror_service(
        &self,
        receptionist: &Receptionist,
        service: MirroredService<'_>,
        registered: bool,
    ) -> Result<(), MirrorServiceError> {
        let registry = &self.core.registry;
        let inbound = registry
            .by_wire_id
            .get(&service.wire_type_id)
            .ok_or(MirrorServiceError::UnknownWireType(service.wire_type_id))?;
        let path = volley::ActorPath::parse(service.path).map_err(ResolveError::from)?;
        crate::transport::node::address_of(&path)?;
        let remote = self.core.remote_ref(path, service.uid, None).to_any();
        (inbound.mirror)(receptionist, service.key_id, &remote, registered);
        Ok(())
    }
}
