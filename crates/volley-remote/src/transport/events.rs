//! What remoting tells the actor system's event stream about other nodes.
//!
//! Subscribe with `system.event_stream().subscribe::<RemotingEvent>(r)`.
//! Each event is published once, by the part of the transport that saw the
//! change happen; the names follow Akka's remoting lifecycle events.

use std::fmt;

use crate::wire::Address;

/// A change in this node's relation to a remote node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemotingEvent {
    /// A control connection to incarnation `uid` of `remote` completed its
    /// handshake: the first one to that incarnation.
    Associated {
        /// The remote node.
        remote: Address,
        /// Its incarnation.
        uid: u64,
    },
    /// The association to `remote` ended, or paused until a reconnect.
    Disassociated {
        /// The remote node.
        remote: Address,
        /// Why.
        reason: DisassociationReason,
    },
    /// Incarnation `uid` of `remote` is quarantined: this node will never
    /// exchange another message with it. A new incarnation of the node (a
    /// restart, with a new uid) associates as usual.
    Quarantined {
        /// The remote node.
        remote: Address,
        /// The incarnation refused from now on.
        uid: u64,
        /// Why, for the log.
        reason: String,
    },
    /// Every actor of this incarnation of `remote` is to be taken as
    /// terminated: each local watcher of one of them got `Terminated`.
    AddressTerminated {
        /// The remote node.
        remote: Address,
        /// The incarnation, if a handshake ever told it.
        uid: Option<u64>,
        /// Why.
        reason: DisassociationReason,
    },
}

/// Why an association ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisassociationReason {
    /// The remote node said it is shutting down.
    Shutdown,
    /// The connection failed (the text says how); a reconnect follows.
    ConnectionLost(String),
    /// The failure detector stopped hearing the node's heartbeats, or it
    /// never completed a handshake.
    Unreachable,
    /// The node restarted: a handshake came from a new incarnation.
    Restarted,
    /// The incarnation is quarantined (by this node or by the peer).
    Quarantined,
    /// This node stopped the association for idleness
    /// (`stop_idle_outbound_after`); the next message starts it again.
    Idle,
}

impl fmt::Display for DisassociationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DisassociationReason::Shutdown => f.write_str("shutdown"),
            DisassociationReason::ConnectionLost(why) => write!(f, "connection lost: {why}"),
            DisassociationReason::Unreachable => f.write_str("unreachable"),
            DisassociationReason::Restarted => f.write_str("restarted"),
            DisassociationReason::Quarantined => f.write_str("quarantined"),
            DisassociationReason::Idle => f.write_str("idle"),
        }
    }
}
