//! The formation gate: every payload's envelope is read before foca or
//! the membership sees the payload, and one from another formation of the
//! cluster is refused (see [`crate::formation`] for why).
//!
//! The rules, per payload:
//! - no envelope, or one this build cannot read: refused (an older build);
//! - the sender is in no cluster yet (formation 0): let through, since a
//!   joiner must be heard to join, and it carries no membership data
//!   (a node holds records only once it has a formation, below);
//! - this node has no formation yet: it adopts the sender's, so a node
//!   joins the cluster that answered it first, as an Akka joiner joins the
//!   seed that answered its `InitJoin` first, and from then on refuses any
//!   other (undone if the body is then refused with nothing merged into
//!   the table: bytes that are no packet must not tie a joiner);
//! - the sender's formation is this node's: let through; another: refused.
//!
//! A refusal is counted, and logged once per peer incarnation (at most
//! [`MAX_PEERS_LOGGED`] of them: a stranger can name itself anew in every
//! packet, and the counts have every one).

use std::collections::BTreeSet;

use super::{ClusterCore, RefusedBy};
use crate::codec::Reader;
use crate::formation::{self, EnvelopeError, Formation};
use crate::member::UniqueAddress;
use crate::outbox::Channel;

/// Peers whose refusal was logged, at most: past it, refusals are only
/// counted.
pub(crate) const MAX_PEERS_LOGGED: usize = 1024;

/// Why the gate refused a payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormationRefused {
    /// The sender belongs to another formation of this cluster: the two
    /// formed apart (a restarted first seed that formed alone, say).
    #[error("a payload from formation {theirs} of this cluster; this node is in formation {ours}, formed apart from it")]
    OtherFormation {
        /// This node's formation.
        ours: Formation,
        /// The sender's.
        theirs: Formation,
    },
    /// The payload's envelope is missing (an older build) or unreadable.
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
}

/// What the gate refused, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FormationRefusals {
    /// Payloads from another formation of the cluster.
    pub other_formation: u64,
    /// Payloads without a readable envelope: from a build before it, of
    /// another envelope version, or garbage.
    pub bad_envelope: u64,
}

/// This node's formation and what the gate refused.
#[derive(Debug, Default)]
pub(crate) struct FormationGate {
    ours: Option<Formation>,
    refusals: FormationRefusals,
    logged: BTreeSet<UniqueAddress>,
    /// Whether a refusal from a sender that could not be named was logged.
    logged_unnamed: bool,
}

/// A payload the gate let through.
#[derive(Debug)]
pub(crate) struct Admitted<'a> {
    /// The channel's own bytes.
    pub(crate) body: &'a [u8],
    /// Set when this payload gave this node its formation.
    pub(crate) adopted: Option<Formation>,
}

impl FormationGate {
    /// This node's formation, once it formed or adopted one.
    pub(crate) fn ours(&self) -> Option<Formation> {
        self.ours
    }

    /// This node forms (or joins) `formation`.
    pub(crate) fn set(&mut self, formation: Formation) {
        self.ours = Some(formation);
    }

    /// Undoes an adoption (see [`ClusterCore::gated`]).
    fn forget(&mut self) {
        self.ours = None;
    }

    pub(crate) fn refusals(&self) -> FormationRefusals {
        self.refusals
    }

    /// Reads `bytes`' envelope and applies the rules of the module doc.
    pub(crate) fn admit<'a>(
        &mut self,
        channel: Channel,
        bytes: &'a [u8],
    ) -> Result<Admitted<'a>, FormationRefused> {
        let opened = match formation::open(bytes) {
            Ok(opened) => opened,
            Err(error) => {
                self.refusals.bad_envelope += 1;
                self.log_once(channel, bytes, &FormationRefused::Envelope(error.clone()));
                return Err(error.into());
            }
        };
        let body = opened.body;
        match (self.ours, opened.formation) {
            (_, None) => Ok(Admitted {
                body,
                adopted: None,
            }),
            (None, Some(theirs)) => {
                self.ours = Some(theirs);
                Ok(Admitted {
                    body,
                    adopted: Some(theirs),
                })
            }
            (Some(ours), Some(theirs)) if ours == theirs => Ok(Admitted {
                body,
                adopted: None,
            }),
            (Some(ours), Some(theirs)) => {
                self.refusals.other_formation += 1;
                let refused = FormationRefused::OtherFormation { ours, theirs };
                self.log_once(channel, body, &refused);
                Err(refused)
            }
        }
    }

    /// Logs `refused` if its sender (the node id every channel's body
    /// starts with) was not logged before.
    fn log_once(&mut self, channel: Channel, body: &[u8], refused: &FormationRefused) {
        let sender = Reader(body).node_id().ok();
        let first = match &sender {
            Some(sender) if self.logged.len() < MAX_PEERS_LOGGED => {
                self.logged.insert(UniqueAddress::of(sender))
            }
            Some(_) => false,
            None => !std::mem::replace(&mut self.logged_unnamed, true),
        };
        if !first {
            return;
        }
        let peer = sender.map_or_else(|| "an unnamed sender".to_owned(), |s| s.to_string());
        match refused {
            FormationRefused::OtherFormation { .. } => tracing::warn!(
                %peer,
                ?channel,
                %refused,
                "refusing cluster packets from another formation of this cluster \
                 (logged once per peer; counted): the two clusters formed apart and stay \
                 apart; restart the members of the one that should not exist to join the other"
            ),
            FormationRefused::Envelope(_) => tracing::warn!(
                %peer,
                ?channel,
                %refused,
                "refusing cluster packets without a readable formation envelope \
                 (logged once per peer; counted): a peer of an older build cannot be a member"
            ),
        }
    }
}

impl ClusterCore {
    /// Hands `handle` the body of a payload that arrived on `channel`, if
    /// the gate lets it through. A formation adopted here names this
    /// node's own payloads from now on, the answers to this one included;
    /// if `handle` then refuses the body and nothing reached the table, the
    /// adoption is undone, so that bytes which are no packet cannot tie a
    /// joiner to a formation.
    pub(super) fn gated(
        &mut self,
        channel: Channel,
        bytes: &[u8],
        handle: impl FnOnce(&mut Self, &[u8]) -> Result<(), RefusedBy>,
    ) -> Result<(), RefusedBy> {
        let admitted = self.gate.admit(channel, bytes)?;
        if let Some(adopted) = admitted.adopted {
            self.outbox.formation = Some(adopted);
        }
        let handled = handle(self, admitted.body);
        if let Some(adopted) = admitted.adopted {
            if handled.is_err() && self.knowledge.lock().table.is_empty() {
                self.gate.forget();
                self.outbox.formation = None;
            } else {
                tracing::debug!(node = %self.me, formation = %adopted, "joining formation");
            }
        }
        handled
    }

    /// Forms a new formation, named after this node, unless it has one.
    pub(super) fn found_formation(&mut self) {
        if self.gate.ours().is_none() {
            let formation = Formation::founded_by(&self.me);
            self.gate.set(formation);
            self.outbox.formation = Some(formation);
            tracing::info!(node = %self.me, %formation, "formed a new cluster formation");
        }
    }

    /// This node's formation: the one it formed, or adopted from the
    /// cluster that answered it first; `None` before either.
    pub fn formation(&self) -> Option<Formation> {
        self.gate.ours()
    }

    /// Payloads refused for their formation or envelope, by reason.
    pub fn formation_refusals(&self) -> FormationRefusals {
        self.gate.refusals()
    }
}

#[cfg(test)]
#[path = "formation_gate_tests.rs"]
mod tests;
