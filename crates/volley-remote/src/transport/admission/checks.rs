//! Who is let in: the checks of an inbound handshake, the acceptor's side
//! of the challenge-response, and whether the node that dialed is
//! associated (and dialed back).

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::transport::admission::probe::confirm_claim;
use crate::transport::admission::AdmissionContext;
use crate::transport::handshake::auth::Secret;
use crate::transport::handshake::setup::{self, AcceptorAuth, HandshakeError, Local, Request};
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::outbound::association::{Origin, Refusal};
use crate::transport::support::lock;
use crate::transport::support::log_limited;
use crate::wire::{HandshakeStatus, AUTH_NONCE_LEN, HANDSHAKE_VERSION_STAMPED, PROTOCOL_VERSION};

/// Admits incarnation `r.uid` of the connecting node, unless it is gone,
/// and makes sure this node talks back: the peer's failure detector needs
/// this node's heartbeats, and its system messages need acks.
pub(in crate::transport) fn admit(
    core: &Arc<impl AdmissionContext>,
    r: &Request,
    dial_back: Option<Origin>,
) -> Result<(), (HandshakeStatus, String)> {
    let Some(origin) = dial_back else {
        // Its messages are delivered; nothing goes back to an address
        // this node does not dial (`handshake/trust.rs`, `admission/probe.rs`).
        return Ok(());
    };
    let association = core.associate(&r.from, origin).map_err(|e| {
        (
            HandshakeStatus::Quarantined,
            format!("not associating: {e}"),
        )
    })?;
    core.handshake_seen(&association, r.incarnation(), r.lane)
        .map_err(|refusal| {
            // An older incarnation was warned of where it was judged.
            if !matches!(refusal, Refusal::Superseded { .. }) {
                log_limited!(warn, from = %r.from, "refused a handshake: {refusal}");
            }
            (HandshakeStatus::Quarantined, refusal.to_string())
        })
}

/// Whether this node talks back to the node that sent `r`, and on whose
/// word: one it has an association with already; else one the trust rules
/// let it dial back, if listed in `known_peers` or if its claimed address
/// answers as that incarnation; a node that proved the shared secret on
/// its word alone (`idle/proof.rs`).
pub(in crate::transport) async fn dials_back(
    core: &impl AdmissionContext,
    r: &Request,
) -> Option<Origin> {
    if core.associations().find(&r.from).is_some() {
        return Some(Origin::Vouched);
    }
    if r.from == *core.address() || !core.trust().connects_back_to(&r.from) {
        return None;
    }
    if core.trust().is_known_peer(&r.from) {
        return Some(Origin::Vouched);
    }
    if core.trust().is_verified(&r.from) {
        return Some(Origin::PeersWord);
    }
    confirm_claim(core, &r.from, r.uid)
        .await
        .then_some(Origin::Vouched)
}

pub(in crate::transport) fn check(
    core: &impl AdmissionContext,
    r: &Request,
) -> Result<(), (HandshakeStatus, String)> {
    if r.version != PROTOCOL_VERSION && r.version != HANDSHAKE_VERSION_STAMPED {
        return Err((
            HandshakeStatus::IncompatibleVersion,
            format!(
                "handshake version {} is neither {PROTOCOL_VERSION} nor {HANDSHAKE_VERSION_STAMPED}",
                r.version
            ),
        ));
    }
    if r.to != *core.address() {
        return Err((
            HandshakeStatus::WrongAddress,
            format!("this node is {}, not {}", core.address(), r.to),
        ));
    }
    match (core.secret(), &r.challenge) {
        (Some(_), Some(c)) if c.len() == AUTH_NONCE_LEN => Ok(()),
        (Some(_), Some(_)) => Err((
            HandshakeStatus::Unauthorized,
            format!("the challenge must be {AUTH_NONCE_LEN} bytes"),
        )),
        (Some(_), None) => Err((
            HandshakeStatus::Unauthorized,
            "this node requires the shared secret (remote.secret); the peer sent no challenge"
                .into(),
        )),
        (None, Some(_)) => Err((
            HandshakeStatus::Unauthorized,
            "this node has no shared secret (remote.secret) configured; the peer has one".into(),
        )),
        (None, None) => Ok(()),
    }
}

/// Refuses an incarnation of the peer that is known to be gone, without
/// changing anything (`handshake_seen` records a new one later). Its age
/// is judged there: its stamp comes after this node's answer.
pub(in crate::transport) fn not_gone(
    core: &impl AdmissionContext,
    r: &Request,
) -> Result<(), (HandshakeStatus, String)> {
    let Some(association) = core.associations().find(&r.from) else {
        return Ok(());
    };
    let control = lock(&association.control);
    if control.dead.contains(&r.uid) || control.quarantined.contains(&r.uid) {
        return Err((
            HandshakeStatus::Quarantined,
            format!("incarnation {} of {} is gone", r.uid, r.from),
        ));
    }
    Ok(())
}

/// The acceptor's side of the challenge-response: answers with its own
/// challenge and proof, then waits (within the handshake timeout) for the
/// initiator's proof, the first frame after the response.
pub(in crate::transport) async fn authenticate(
    core: &impl AdmissionContext,
    secret: &Secret,
    r: &Request,
    stream: &mut (impl AsyncRead + AsyncWrite + Unpin),
    buf: &mut BytesMut,
) -> Result<(), HandshakeError> {
    let exchange = AcceptorAuth::new(secret, r, core.address(), core.uid())?;
    let local = Local {
        address: core.address(),
        uid: core.uid(),
        stamp: r.answer_stamp(core.stamp()),
    };
    setup::accept(stream, &local, Some(&exchange.response)).await?;
    tokio::time::timeout(
        core.settings().handshake_timeout,
        exchange.read_proof(secret, stream, buf),
    )
    .await
    .map_err(|_| HandshakeError::TimedOut)??;
    Ok(())
}
