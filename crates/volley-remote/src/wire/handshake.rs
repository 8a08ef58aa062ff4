//! Handshake PDUs: the first frame each way on every connection.

use super::address::Address;

/// Sent by the connecting side right after the preamble, on every lane.
///
/// Each lane's connection handshakes on its own, so each is authenticated
/// and bound to the association (remote address + uid) independently.
/// The addresses are owned: a handshake happens once per connection, so its
/// two small allocations do not matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeRequest<'a> {
    /// Protocol version; must equal the preamble's.
    pub version: u8,
    /// The initiator's own address.
    pub from: Address,
    /// The initiator's incarnation uid: random per start of the actor system,
    /// so a restarted node at the same address is recognised as new.
    pub uid: u64,
    /// The address the initiator believes it is connecting to. The acceptor
    /// rejects the handshake if it is not its own, which catches stale DNS,
    /// port reuse and misrouted connections.
    pub to: Address,
    /// Opaque credential checked by the acceptor, if configured.
    pub auth_token: Option<&'a [u8]>,
}

/// The acceptor's answer to a [`HandshakeRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse<'a> {
    /// Protocol version; must equal the preamble's.
    pub version: u8,
    /// Whether the association is accepted.
    pub status: HandshakeStatus,
    /// The acceptor's own address.
    pub from: Address,
    /// The acceptor's incarnation uid.
    pub uid: u64,
    /// Opaque credential of the acceptor, for an initiator that wants to
    /// check it. volley's transport always sends `None` here and checks
    /// only the initiator's token (docs/wire-protocol.md §13).
    pub auth_token: Option<&'a [u8]>,
    /// Human-readable explanation (empty when accepted).
    pub reason: &'a str,
}

/// Outcome of a handshake. Every status other than `Accepted` is followed by
/// the acceptor closing the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HandshakeStatus {
    /// Association established; frames may flow.
    Accepted = 0,
    /// The request's version is not one the acceptor speaks.
    IncompatibleVersion = 1,
    /// The auth token is missing or wrong.
    Unauthorized = 2,
    /// The request's `to` address is not the acceptor's address.
    WrongAddress = 3,
    /// The initiator's uid is quarantined by the acceptor: that incarnation
    /// may never associate again and must restart.
    Quarantined = 4,
}

impl HandshakeStatus {
    /// The status for a wire value, if it is one.
    pub fn from_u8(v: u8) -> Option<HandshakeStatus> {
        Some(match v {
            0 => HandshakeStatus::Accepted,
            1 => HandshakeStatus::IncompatibleVersion,
            2 => HandshakeStatus::Unauthorized,
            3 => HandshakeStatus::WrongAddress,
            4 => HandshakeStatus::Quarantined,
            _ => return None,
        })
    }
}
