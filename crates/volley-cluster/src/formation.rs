//! A cluster's formation and the envelope every cluster payload travels
//! in.
//!
//! Two clusters of one name can form apart: a restarted first seed that
//! hears from no other seed within `seed_node_timeout` forms one of its
//! own, as Akka's does. foca merges any two SWIM groups that reach each
//! other, and the member tables merge as a semilattice, so without a mark
//! the two would fuse and each would bring its own oldest member (two
//! singletons, two shard coordinators). Akka keeps such islands apart: a
//! node ignores gossip from a node that is not a member of its cluster.
//! volley marks each cluster with a [`Formation`], picked by the member
//! that forms it and adopted by every node that joins, and each payload
//! carries its sender's formation, so a node can refuse one from another
//! formation before foca or the table sees it.
//!
//! The envelope (specified in `docs/reference/cluster.md` and
//! `docs/wire-protocol.md` §5.13) is 10 bytes in front of each channel's
//! own layout: a marker byte `0x00`, the envelope version `u8` (1), and
//! the sender's formation `u64` little-endian, 0 while the sender is in no
//! cluster yet. A payload from a build before the envelope starts with a
//! node id's host length, 1 to 255 little-endian, so its first byte is
//! never 0 and such a payload is told apart and refused
//! ([`EnvelopeError::Missing`]); such a build reads this one's payloads as
//! a host of 256 bytes and refuses them as malformed.

use std::fmt;
use std::num::NonZeroU64;

use bytes::BufMut;

use crate::member::wire::Fnv1a;
use crate::member::UniqueAddress;

/// The first byte of every enveloped payload.
const MARKER: u8 = 0x00;

/// The envelope version this build writes and reads.
pub const ENVELOPE_VERSION: u8 = 1;

/// The envelope's length: marker, version, formation.
pub const ENVELOPE_LEN: usize = 1 + 1 + 8;

/// Which formation of a cluster a node belongs to: named after the
/// incarnation of the member that formed it, and kept by every member
/// for the cluster's life.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Formation(NonZeroU64);

impl Formation {
    /// The formation `founder` forms: FNV-1a 64 of its host, port and uid
    /// (0, which means "none" on the wire, becomes 1). A restart at the same
    /// address is another incarnation, so it forms another formation.
    pub fn founded_by(founder: &UniqueAddress) -> Self {
        let mut hasher = Fnv1a::default();
        hasher.write(founder.host.as_bytes());
        hasher.write(&founder.port.to_le_bytes());
        hasher.write(&founder.uid.to_le_bytes());
        Self(NonZeroU64::new(hasher.finish()).unwrap_or(NonZeroU64::MIN))
    }

    /// The formation a wire value names; `None` for 0 (no cluster yet).
    pub fn from_wire(value: u64) -> Option<Self> {
        NonZeroU64::new(value).map(Self)
    }

    /// Its wire value (never 0).
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Display for Formation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for Formation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Formation({self})")
    }
}

/// Why a payload's envelope could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The payload does not start with the envelope: a peer of a build
    /// before it (or bytes that are no cluster payload at all).
    #[error(
        "a cluster payload without the formation envelope: a peer of an older build, or garbage"
    )]
    Missing,
    /// An envelope of a version this build does not read.
    #[error(
        "a cluster payload of envelope version {0}; this build reads version {ENVELOPE_VERSION}"
    )]
    UnknownVersion(u8),
    /// Fewer bytes than the envelope.
    #[error("a cluster payload of {0} bytes, shorter than its {ENVELOPE_LEN}-byte envelope")]
    Truncated(usize),
}

/// A payload with its envelope read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opened<'a> {
    /// The sender's formation, `None` while it is in no cluster.
    pub(crate) formation: Option<Formation>,
    /// The channel's own bytes.
    pub(crate) body: &'a [u8],
}

/// `body` in an envelope naming `formation`.
pub(crate) fn seal(formation: Option<Formation>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENVELOPE_LEN + body.len());
    out.put_u8(MARKER);
    out.put_u8(ENVELOPE_VERSION);
    out.put_u64_le(formation.map_or(0, Formation::get));
    out.put_slice(body);
    out
}

/// Reads the envelope of `bytes`.
pub(crate) fn open(bytes: &[u8]) -> Result<Opened<'_>, EnvelopeError> {
    match bytes {
        [] => Err(EnvelopeError::Truncated(0)),
        [first, ..] if *first != MARKER => Err(EnvelopeError::Missing),
        [_, version, ..] if *version != ENVELOPE_VERSION => {
            Err(EnvelopeError::UnknownVersion(*version))
        }
        _ if bytes.len() < ENVELOPE_LEN => Err(EnvelopeError::Truncated(bytes.len())),
        _ => {
            let (head, body) = bytes.split_at(ENVELOPE_LEN);
            let mut value = [0; 8];
            value.copy_from_slice(&head[2..]);
            Ok(Opened {
                formation: Formation::from_wire(u64::from_le_bytes(value)),
                body,
            })
        }
    }
}

#[cfg(test)]
#[path = "formation_tests.rs"]
mod tests;
