//! One registration as it travels between members: the key's id, the
//! wire type id of its protocol (a `TypeId` is not portable, so a key is
//! named across nodes by its id and its protocol's wire id) and the
//! service's full path and incarnation uid.

use std::sync::Arc;

use crate::member::UniqueAddress;

/// A service registered under a key on some member.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceEntry {
    /// The service key's id.
    pub key: Arc<str>,
    /// The wire type id the key's protocol is registered under for
    /// remoting.
    pub wire_type_id: u32,
    /// The service's full path, with its node's address
    /// (`volley://system@host:port/user/a`).
    pub path: Arc<str>,
    /// The service's incarnation uid.
    pub uid: u64,
}

/// A service of another member appeared in or left this node's registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceChange {
    /// The member that registered it.
    pub owner: UniqueAddress,
    /// The service.
    pub entry: ServiceEntry,
    /// True when it appeared, false when it left.
    pub registered: bool,
}
