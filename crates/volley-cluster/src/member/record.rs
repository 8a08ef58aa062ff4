//! One member's record: who it is, its status and its metadata
//! (design §3.2).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use super::status::MemberStatus;
use crate::node_id::NodeId;

/// A member: one incarnation of one node, `(host, port, uid)`, as Akka's
/// `UniqueAddress`. Its order (host, then port, then uid) is the order the
/// leader is chosen in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UniqueAddress {
    /// The host part of the address.
    pub host: Arc<str>,
    /// The port part of the address.
    pub port: u16,
    /// The incarnation uid.
    pub uid: u64,
}

impl UniqueAddress {
    /// The member an identity belongs to, whatever its SWIM epoch.
    pub fn of(id: &NodeId) -> Self {
        Self {
            host: Arc::clone(id.shared_host()),
            port: id.port(),
            uid: id.uid(),
        }
    }
}

impl fmt::Display for UniqueAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}#{}", self.host, self.port, self.uid)
    }
}

/// What the cluster knows of one member.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberRecord {
    /// Its SWIM identity (the greatest epoch heard of).
    pub node: NodeId,
    /// Its status.
    pub status: MemberStatus,
    /// The order it became Up in, from 1; 0 while it never was.
    pub up_number: u32,
    /// Its application version, dotted (Akka's `app-version`).
    pub app_version: String,
    /// Its roles.
    pub roles: BTreeSet<String>,
}

impl MemberRecord {
    /// A member that asks to join, with its metadata.
    pub fn joining(node: NodeId, app_version: String, roles: BTreeSet<String>) -> Self {
        Self {
            node,
            status: MemberStatus::Joining,
            up_number: 0,
            app_version,
            roles,
        }
    }

    /// The member this record is about.
    pub fn unique_address(&self) -> UniqueAddress {
        UniqueAddress::of(&self.node)
    }

    /// The join of two records of one member: each field's greater value.
    /// The status only moves forward and the node itself sets roles and
    /// version once, so this is the later record; taking every field's
    /// maximum makes the merge commutative, associative and idempotent
    /// even for records that disagree.
    pub fn merged(&self, other: &Self) -> Self {
        Self {
            node: self.node.clone().max(other.node.clone()),
            status: self.status.max(other.status),
            up_number: self.up_number.max(other.up_number),
            app_version: self.app_version.clone().max(other.app_version.clone()),
            roles: self.roles.clone().max(other.roles.clone()),
        }
    }

    /// The same record in `status`.
    pub(crate) fn with_status(&self, status: MemberStatus) -> Self {
        Self {
            status,
            ..self.clone()
        }
    }
}
