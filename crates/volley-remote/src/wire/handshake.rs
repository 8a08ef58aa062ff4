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
    /// Handshake version: the preamble's protocol version (1), or
    /// [`HANDSHAKE_VERSION_STAMPED`] when an [`IncarnationStamp`] frame
    /// follows this one (docs/wire-protocol.md §5.1a). The frames after
    /// the handshake are version 1's either way.
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
    /// Authentication: the initiator's challenge, [`AUTH_NONCE_LEN`] random
    /// bytes, when it has a shared secret; absent otherwise
    /// (docs/wire-protocol.md §6.1). Never the secret itself.
    pub auth: Option<&'a [u8]>,
}

/// The acceptor's answer to a [`HandshakeRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse<'a> {
    /// The request's handshake version: [`HANDSHAKE_VERSION_STAMPED`]
    /// when an [`IncarnationStamp`] frame follows this one.
    pub version: u8,
    /// Whether the association is accepted.
    pub status: HandshakeStatus,
    /// The acceptor's own address.
    pub from: Address,
    /// The acceptor's incarnation uid.
    pub uid: u64,
    /// Authentication, when the request carried a challenge and the
    /// handshake is accepted: the acceptor's own challenge
    /// ([`AUTH_NONCE_LEN`] bytes) followed by its proof ([`AUTH_MAC_LEN`]
    /// bytes) of the shared secret (docs/wire-protocol.md §6.1).
    pub auth: Option<&'a [u8]>,
    /// Human-readable explanation (empty when accepted).
    pub reason: &'a str,
}

/// The handshake version whose request and response are each followed by
/// an [`IncarnationStamp`] frame (docs/wire-protocol.md §5.1a). Version 1
/// handshakes carry no stamp: every peer built before stamps existed.
pub const HANDSHAKE_VERSION_STAMPED: u8 = 2;

/// When an incarnation started, in a handshake of version
/// [`HANDSHAKE_VERSION_STAMPED`]: the acceptor's right after its accepted
/// [`HandshakeResponse`], the initiator's once it has that response
/// (after its [`AuthProof`], with a secret).
///
/// A frame of its own rather than a field of the request, so that a node
/// of version 1 refuses a stamped request with `IncompatibleVersion` (it
/// decodes the request and checks its version) instead of failing to
/// decode it, and the initiator knows to shake hands again without one.
/// The initiator's comes after the answer so that nothing but the request
/// reaches an acceptor that has not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncarnationStamp {
    /// The sender's start, in microseconds since the Unix epoch, taken
    /// once when its remoting started; `0` when it tells no order. Of
    /// two incarnations of one address, the one with the greater
    /// `(stamp, uid)` is the newer.
    pub stamp: u64,
}

/// Length of a challenge (a nonce) in the authentication exchange.
pub const AUTH_NONCE_LEN: usize = 32;
/// Length of a proof (HMAC-SHA256) in the authentication exchange.
pub const AUTH_MAC_LEN: usize = 32;

/// The initiator's proof of the shared secret: the first frame after an
/// accepted handshake that carried challenges (docs/wire-protocol.md §6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthProof {
    /// HMAC-SHA256 over the handshake's transcript.
    pub mac: [u8; AUTH_MAC_LEN],
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

/// The name by which a node advertises that it decodes Request frames
/// (docs/wire-protocol.md §5.5b), in the feature list of an accepted
/// [`HandshakeResponse`].
pub const FEATURE_REQUESTS: &str = "requests";

/// The optional features an acceptor decodes, as its accepted
/// [`HandshakeResponse`] lists them in `reason` (docs/wire-protocol.md
/// §5.2a): names separated by spaces. A response that lists nothing (every
/// peer built before the list existed sends an empty `reason`) advertises
/// nothing, and the initiator sends that peer only what every version-1
/// peer decodes. Names a node does not know are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Features {
    /// The peer decodes Request frames (`0x15`): an ask's reply handle may
    /// travel inline instead of in a ReplyHandleDeclaration.
    pub requests: bool,
}

impl Features {
    /// What this implementation decodes, and so advertises.
    pub const SUPPORTED: Features = Features { requests: true };

    /// The features listed in an accepted response's `reason`.
    pub fn parse(list: &str) -> Features {
        let mut features = Features::default();
        for name in list.split_ascii_whitespace() {
            if name == FEATURE_REQUESTS {
                features.requests = true;
            }
        }
        features
    }

    /// The list to send in an accepted response's `reason`.
    pub fn list(self) -> &'static str {
        if self.requests {
            FEATURE_REQUESTS
        } else {
            ""
        }
    }
}

impl HandshakeResponse<'_> {
    /// The features the acceptor advertised: none unless the handshake was
    /// accepted (a refusal's `reason` is text for people).
    pub fn features(&self) -> Features {
        match self.status {
            HandshakeStatus::Accepted => Features::parse(self.reason),
            _ => Features::default(),
        }
    }
}
