//! Every frame but a user message, as the reader hands it on: ref
//! declarations, replies, spawns, heartbeats, goodbyes, system messages,
//! flushes and cluster traffic, each to the part of the node that owns it.
//!
//! The run before such a frame is already delivered (`frames.rs`), so a
//! declaration here never rebinds an id a pending message uses.

use std::time::Instant;

use volley::remote::RemoteRef;

use crate::transport::cluster;
use crate::transport::cluster::receive::Sender;
use crate::transport::control::flush::UserLaneFlushes;
use crate::transport::control::remote_spawn;
use crate::transport::control::remote_watch::NoSuchActor;
use crate::transport::control::system_messages::SystemMessages;
use crate::transport::events::DisassociationReason;
use crate::transport::inbound::accept::InboundError;
use crate::transport::inbound::reader::Reader;
use crate::transport::inbound::replies::ReplyRun;
use crate::transport::inbound::InboundContext;
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::liveness::rtt;
use crate::transport::support::log_limited;
use crate::wire::{
    Disassociate, DisassociateReason, Lane, Pdu, RefDeclaration, ReplyHandleDeclaration,
    SpawnRequest, SystemMessage,
};

impl<C: InboundContext> Reader<'_, C> {
    /// Hands `pdu` to the part of the node that owns it.
    pub(super) fn control(&mut self, pdu: Pdu<'_>) -> Result<(), InboundError> {
        // Heartbeats, and the goodbye of a peer that stops its
        // association, are not traffic that starts this node's again.
        self.peer.active |= !matches!(
            pdu,
            Pdu::Heartbeat | Pdu::HeartbeatAck | Pdu::Disassociate(_)
        );
        let (core, peer) = (self.core, &self.peer.address);
        match pdu {
            Pdu::UserMessage(_) | Pdu::TracedUserMessage(_) | Pdu::Request(_) => self.alone(pdu),
            Pdu::Reply(r) => self.replies(&mut ReplyRun::alone(r)),
            Pdu::RefDeclaration(d) => self.declare_ref(d)?,
            Pdu::ReplyHandleDeclaration(d) => self.declare_reply_handle(d)?,
            Pdu::SpawnRequest(r) => self.spawn_request(r),
            Pdu::SpawnResponse(r) => remote_spawn::complete(&**core, peer, r),
            Pdu::Heartbeat => {
                if let Some(detector) = &self.peer.detector {
                    detector.heartbeat(Instant::now());
                }
                rtt::answer_heartbeat(&**core, peer);
                if self.peer.association.is_none() {
                    crate::transport::admission::recheck::heartbeat_from_undialed(
                        core,
                        peer,
                        self.peer.uid,
                    );
                }
            }
            // Times this node's heartbeat; the detector judges arrivals only.
            Pdu::HeartbeatAck => rtt::ack_heard(&**core, peer),
            Pdu::Disassociate(d) => self.disassociated(d),
            Pdu::SystemMessage(m) => self.system_message(m)?,
            Pdu::SystemAck(a) => {
                if let Some(association) = self.peer.association() {
                    core.receive_system_ack(association, self.peer.uid, a.ack);
                }
            }
            // Everything before it on this connection is delivered (`control/flush.rs`).
            Pdu::Flush(f) => core.answer_flush(peer, f.id),
            Pdu::FlushAck(a) => core.flush_acked(peer, a.id),
            Pdu::Cluster(frame) => {
                let from = Sender {
                    address: peer,
                    uid: self.peer.uid,
                    dialed_back: self.peer.association.is_some(),
                };
                cluster::receive::receive(&**core, from, &mut self.peer.cluster_rate, frame);
            }
            Pdu::HandshakeRequest(_)
            | Pdu::HandshakeResponse(_)
            | Pdu::AuthProof(_)
            | Pdu::IncarnationStamp(_) => {
                log_limited!(warn, peer = %peer, "handshake frame after the handshake; ignored");
            }
        }
        Ok(())
    }

    /// A user message the pass did not gather (the pass gathers them all;
    /// kept so that no kind is dropped): delivered as a run of one.
    fn alone(&mut self, pdu: Pdu<'_>) {
        if matches!(pdu, Pdu::Request(_)) {
            self.peer.make_reply_route(self.core);
        }
        let mut to = self.deliver();
        match pdu {
            Pdu::UserMessage(m) => to.one(m),
            Pdu::TracedUserMessage(t) => to.traced(t),
            Pdu::Request(r) => to.request(r),
            _ => {}
        }
    }

    /// A ref the peer declares: bound to what its path names here, or
    /// to a placeholder that answers system messages for nobody there.
    fn declare_ref(&mut self, d: RefDeclaration<'_>) -> Result<(), InboundError> {
        let core = self.core;
        let control = self.peer.lane == Lane::Control;
        let mut selection = None;
        let found = core.resolve_declared(
            d.path,
            d.uid,
            &self.peer.address,
            self.peer.association.as_ref(),
            &mut selection,
        );
        let id = d.id.get();
        match (found, selection) {
            (found, Some(path)) => {
                let found = match found {
                    // A system message to a path with nobody there is
                    // answered (a watch with `Terminated`) until an actor
                    // lives there.
                    None if control => NoSuchActor::placeholder(core, d.path, d.uid),
                    None => {
                        tracing::debug!(
                            path = d.path,
                            "declared ref is not here yet; its messages are dead letters until an actor is"
                        );
                        None
                    }
                    found => found,
                };
                self.imports.declare_selection(id, path, found)?
            }
            (Some(actor), _) => self.imports.declare(id, actor)?,
            (None, _) if control => {
                // A system message may name an actor that is not here (a
                // watch of one that stopped): it is answered.
                if let Some(placeholder) = NoSuchActor::placeholder(core, d.path, d.uid) {
                    self.imports.declare(id, placeholder)?;
                }
            }
            (None, _) => {
                // A re-declaration that names nothing here unbinds the id:
                // its messages must not reach what it named before.
                self.imports.forget(id);
                tracing::debug!(
                    path = d.path,
                    "declared ref is not here; its messages become dead letters"
                );
            }
        }
        Ok(())
    }

    /// The reply handle of one of the peer's asks.
    fn declare_reply_handle(&mut self, d: ReplyHandleDeclaration) -> Result<(), InboundError> {
        let route = self.peer.reply_route(self.core);
        let system = self.core.system().clone();
        let handle = RemoteRef::reply_handle(&self.peer.root, d.correlation, system, route);
        self.imports.declare(d.id.get(), handle.to_any())?;
        Ok(())
    }

    /// A peer asks for an actor here: only a peer this node dials back,
    /// since the answer goes back on this node's lanes.
    fn spawn_request(&mut self, r: SpawnRequest<'_>) {
        let (core, peer) = (self.core, &self.peer.address);
        match self.peer.association {
            Some(_) => remote_spawn::spawn_here(core, peer, r),
            None => core.trust().refused(
                &**core,
                peer,
                "a spawn request from a peer this node does not dial back",
            ),
        }
    }

    /// The peer's goodbye, or its word that it quarantined this node.
    fn disassociated(&mut self, d: Disassociate<'_>) {
        let (core, peer) = (self.core, &self.peer.address);
        log_limited!(info, peer = %peer, reason = ?d.reason, text = d.text, "peer disassociated");
        let Some(association) = self.peer.association() else {
            return;
        };
        match d.reason {
            // Acted on when the node's last connection ends, after what
            // its other lanes still carry.
            DisassociateReason::Shutdown => core.goodbye_heard(association, self.peer.uid),
            DisassociateReason::Quarantined => core.peer_left(
                association,
                self.peer.uid,
                DisassociationReason::Quarantined,
            ),
            // Its heartbeats stop with its association: not a silence to
            // judge.
            DisassociateReason::Idle => core.reachability().pause(peer),
            _ => {}
        }
    }

    /// A numbered system message: delivered once, in order, and acked
    /// after the buffer.
    fn system_message(&mut self, m: SystemMessage<'_>) -> Result<(), InboundError> {
        let core = self.core;
        let Some(association) = self.peer.association.as_deref() else {
            // Its acks could not go back: the sender would resend forever.
            let why = "a system message from a peer this node does not dial back";
            core.trust().refused(&**core, &self.peer.address, why);
            return Ok(());
        };
        match core.receive_system_message(association, self.peer.uid, &mut self.imports, m) {
            Ok(Some(ack)) => self.peer.ack_due = Some(ack),
            Ok(None) => {}
            Err(e) => return Err(InboundError::SystemMessage(e)),
        }
        Ok(())
    }
}
