//! System messages between nodes, delivered exactly once and in order,
//! across reconnects: watch, unwatch, the death notice, stop and graceful
//! stop (wire-protocol §5.9, §5.10).
//!
//! The sender numbers each message (per association, from 1) and keeps it
//! in the association's [`Outbox`] until the peer acknowledges it. A new
//! control connection to the same incarnation starts by sending every
//! unacknowledged message again, in order, with its old number; the
//! receiver delivers `last + 1`, drops what it has seen (and acks again),
//! and closes the connection on a gap, so that the resend on the next
//! connection fills it. Acks are cumulative and go back on the receiver's
//! own control connection. A new incarnation of the peer starts both
//! sides afresh (`liveness/incarnations.rs`); the messages the old one never acked
//! are answered there (a watch with `Terminated`).
//!
//! The outbox is bounded (`system_message_buffer_size`) and ages
//! (`give_up_system_message_after`): past either, the peer's incarnation
//! is quarantined, as in Artery.

use std::sync::Arc;
use std::time::Instant;

use bytes::BufMut;
use volley::remote::{deliver_system, RemoteSystemMsg};
use volley::{ActorPath, AnyRef};

use crate::transport::control::remote_watch::WatcherProxies;
use crate::transport::control::ControlContext;
use crate::transport::liveness::authority::{MemberReport, MemberVerdicts};
use crate::transport::liveness::incarnations::Incarnations;
use crate::transport::node::Undeliverable;
use crate::transport::outbound::association::system_buffers::{
    Inbox, Pending, SystemKind, SystemMessageError,
};
use crate::transport::outbound::association::Association;
use crate::transport::refs::tables::ImportTable;
use crate::transport::support::lock;
use crate::wire::{Address, Lane, Pdu, SystemAck, SystemMessage};

/// The reliable system-message channel, for any node with a control
/// context.
pub(crate) trait SystemMessages: ControlContext {
    /// Sends a system message to `recipient`, a ref to an actor on the node
    /// of `association`, reliably. A message the peer can no longer get
    /// (the node is down) is handed back.
    fn send_system_message(
        &self,
        association: &Association,
        kind: SystemKind,
        recipient: AnyRef,
        sender: Option<AnyRef>,
        payload: Vec<u8>,
    ) -> Result<(), SystemKind> {
        let lane = association.lane(Lane::Control);
        let mut control = lock(&association.control);
        if association.is_down() || self.is_shut_down() {
            return Err(kind);
        }
        if control.outbox.unacked.len() >= self.settings().system_message_buffer_size {
            drop(control);
            let report = MemberReport::SystemMessageBufferFull {
                limit: self.settings().system_message_buffer_size,
            };
            // A member's is refused, and the authority told.
            if !self.reported_to_authority(association, report.clone()) {
                self.quarantine(association, &report.to_string());
            }
            return Err(kind);
        }
        control.outbox.next_seq += 1;
        let pending = Pending {
            seq: control.outbox.next_seq,
            kind,
            recipient,
            sender,
            payload,
            queued_at: Instant::now(),
        };
        let ack = control.outbox.inbound_acked;
        lane.send_system(self, &pending, ack, None);
        control.outbox.unacked.push_back(pending);
        drop(control);
        self.check_control_queue(association);
        Ok(())
    }

    /// Writes every unacknowledged system message into `out`, the start of
    /// a new control connection to the same incarnation.
    fn resend_system_messages(&self, association: &Association, out: &mut bytes::BytesMut) {
        let control = lock(&association.control);
        let lane = association.lane(Lane::Control);
        let outbox = &control.outbox;
        let ack = outbox.inbound_acked;
        for pending in &outbox.unacked {
            lane.send_system(self, pending, ack, Some(out));
        }
        if !control.outbox.unacked.is_empty() {
            tracing::debug!(remote = %association.remote, count = control.outbox.unacked.len(), "resending unacknowledged system messages");
        }
    }

    /// Handles a system message read from incarnation `peer_uid` of the
    /// node of `association`. Returns the ack to send back, if any.
    fn receive_system_message(
        self: &Arc<Self>,
        association: &Association,
        peer_uid: u64,
        imports: &mut ImportTable,
        m: SystemMessage<'_>,
    ) -> Result<Option<u64>, SystemMessageError> {
        let mut inbox = lock(&association.inbox);
        if inbox.uid != peer_uid {
            if lock(&association.control).uid != Some(peer_uid) {
                // From an incarnation that is gone (or not yet announced):
                // its messages die with it.
                return Ok(None);
            }
            *inbox = Inbox {
                uid: peer_uid,
                delivered: 0,
            };
        }
        if m.ack > 0 {
            lock(&association.control).outbox.acknowledge(m.ack);
        }
        if inbox.accept(m.seq)? {
            // Delivered with the inbox held, so a second connection of the
            // same incarnation cannot overtake.
            self.deliver_system_message(&association.remote, imports, &m);
        }
        Ok(Some(inbox.delivered))
    }

    /// A cumulative ack from the peer.
    fn receive_system_ack(&self, association: &Association, peer_uid: u64, ack: u64) {
        let mut control = lock(&association.control);
        if control.uid == Some(peer_uid) {
            control.outbox.acknowledge(ack);
        }
    }

    /// Acknowledges, on this node's control connection to the peer, what
    /// has been received from its incarnation `peer_uid`.
    fn send_system_ack(&self, association: &Association, peer_uid: u64, ack: u64) {
        let mut control = lock(&association.control);
        // An ack for an incarnation that is gone must not reach its
        // successor, whose numbering starts again.
        if control.uid != Some(peer_uid) {
            return;
        }
        control.outbox.inbound_acked = control.outbox.inbound_acked.max(ack);
        let queued = association
            .lane(Lane::Control)
            .send_pdu(self, &Pdu::SystemAck(SystemAck { ack }));
        drop(control);
        if queued.is_err() {
            // The control lane is over its bound.
            self.check_control_queue(association);
        }
    }

    fn deliver_system_message(
        self: &Arc<Self>,
        peer: &Address,
        imports: &mut ImportTable,
        m: &SystemMessage<'_>,
    ) {
        let Some(kind) = SystemKind::from_u32(m.header.type_id) else {
            self.undeliverable(peer, Undeliverable::UnknownSystemKind(m.header.type_id));
            return;
        };
        if self.trust().untrusted_mode && !kind.allowed_untrusted() {
            let what = format!("a {kind:?} system message (untrusted mode)");
            return self.trust().refused(&**self, peer, &what);
        }
        if let SystemKind::Spawn | SystemKind::Spawned = kind {
            return self.deliver_spawn_message(peer, kind, m.payload);
        }
        let id = m.header.recipient.get();
        // A path declared without a uid is whatever actor lives there now,
        // as on the user lanes: a watch or stop reaches the actor that took
        // the name since the declaration, not the one it named then.
        if imports.is_stale(id) {
            imports.rebind(id, self.system());
        }
        let Some(recipient) = imports.get(id) else {
            self.undeliverable(
                peer,
                Undeliverable::UndeclaredRecipient { kind: kind.name() },
            );
            return;
        };
        let recipient = recipient.actor().clone();
        let sender = m
            .header
            .sender
            .and_then(|id| imports.get(id.get()))
            .map(|r| r.actor().clone());
        let msg = match kind {
            SystemKind::Watch | SystemKind::Unwatch => {
                let Some(watcher) = sender else {
                    self.undeliverable(peer, Undeliverable::NoWatcher { kind: kind.name() });
                    return;
                };
                let watcher = self.watcher_proxy(peer, &recipient, watcher);
                if kind == SystemKind::Watch {
                    self.remote_watches()
                        .incoming(peer, &recipient, &watcher, true);
                    RemoteSystemMsg::Watch { watcher }
                } else {
                    self.remote_watches()
                        .incoming(peer, &recipient, &watcher, false);
                    RemoteSystemMsg::Unwatch { watcher }
                }
            }
            SystemKind::Terminate => RemoteSystemMsg::Terminate,
            SystemKind::GracefulStop => RemoteSystemMsg::GracefulStop,
            SystemKind::Spawn | SystemKind::Spawned => unreachable!("handled above"),
            SystemKind::DeathNotice => {
                match decode_death_notice(m.payload) {
                    Some((uid, path)) => self.remote_watches().death_notice(
                        peer,
                        &recipient,
                        &path,
                        uid,
                        self.dead_actors(),
                    ),
                    None => {
                        self.undeliverable(peer, Undeliverable::Malformed { kind: kind.name() })
                    }
                }
                return;
            }
        };
        deliver_system(&recipient, msg);
    }

    /// A spawn request or answer: its payload is the PDU's whole frame.
    fn deliver_spawn_message(self: &Arc<Self>, peer: &Address, kind: SystemKind, frame: &[u8]) {
        let decoder =
            crate::wire::Decoder::new(crate::wire::DecoderConfig::for_lane(Lane::Control));
        match (kind, decoder.decode_frame(frame)) {
            (SystemKind::Spawn, Ok(Some((Pdu::SpawnRequest(r), _)))) => {
                crate::transport::control::remote_spawn::spawn_here(self, peer, r)
            }
            (SystemKind::Spawned, Ok(Some((Pdu::SpawnResponse(r), _)))) => {
                crate::transport::control::remote_spawn::complete(&**self, peer, r)
            }
            _ => self.undeliverable(peer, Undeliverable::Malformed { kind: kind.name() }),
        }
    }

    /// Sends `pdu` (a spawn request or answer) to `node` as a system
    /// message of `kind`, addressed to that node's `/user`.
    fn send_spawn_message(
        self: &Arc<Self>,
        node: &Address,
        kind: SystemKind,
        pdu: &Pdu<'_>,
    ) -> Result<(), String> {
        let mut frame = bytes::BytesMut::new();
        crate::wire::Encoder::for_lane(Lane::Control)
            .encode(pdu, &mut frame)
            .map_err(|e| e.to_string())?;
        let association = self.association(node).map_err(|e| e.to_string())?;
        let user = ActorPath::parse(&format!("{node}/user")).map_err(|e| e.to_string())?;
        let recipient = self.remote_ref(user, 0, None).to_any();
        self.send_system_message(&association, kind, recipient, None, frame.to_vec())
            .map_err(|_| format!("{node} is gone (unreachable, quarantined or shut down)"))
    }
}

impl<C: ControlContext> SystemMessages for C {}

/// The payload of a death notice: the dead actor's uid and full path.
pub(crate) fn death_notice_payload(uid: u64, path: &str) -> Vec<u8> {
    let mut payload = Vec::with_capacity(8 + path.len());
    payload.put_u64_le(uid);
    payload.extend_from_slice(path.as_bytes());
    payload
}

fn decode_death_notice(payload: &[u8]) -> Option<(u64, ActorPath)> {
    let (uid, path) = payload.split_first_chunk::<8>()?;
    let path = ActorPath::parse(std::str::from_utf8(path).ok()?).ok()?;
    Some((u64::from_le_bytes(*uid), path))
}

#[cfg(test)]
mod across_reconnects;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::outbound::association::system_buffers::Outbox;

    #[test]
    fn a_death_notice_payload_round_trips_and_garbage_is_refused() {
        let path = "volley://a@127.0.0.1:2552/user/worker-1";
        let payload = death_notice_payload(42, path);
        let (uid, parsed) = decode_death_notice(&payload).unwrap();
        assert_eq!(uid, 42);
        assert_eq!(parsed.to_string(), path);
        assert!(decode_death_notice(&payload[..7]).is_none(), "short uid");
        let mut bad = death_notice_payload(1, "");
        bad.extend_from_slice(&[0xff, 0xfe]);
        assert!(decode_death_notice(&bad).is_none(), "not UTF-8");
    }

    #[test]
    fn the_inbox_delivers_each_number_once_in_order_and_refuses_a_gap() {
        let mut inbox = Inbox::default();
        assert!(inbox.accept(1).unwrap());
        assert!(inbox.accept(2).unwrap());
        // A resend after a reconnect repeats what already arrived.
        assert!(!inbox.accept(1).unwrap());
        assert!(!inbox.accept(2).unwrap());
        assert!(inbox.accept(3).unwrap());
        assert!(matches!(
            inbox.accept(5),
            Err(SystemMessageError::Gap {
                seq: 5,
                delivered: 3
            })
        ));
        assert_eq!(inbox.delivered, 3, "a gap delivers nothing");
        assert!(inbox.accept(4).unwrap());
        assert!(inbox.accept(5).unwrap());
    }

    #[test]
    fn acks_are_cumulative_and_reset_forgets_everything() {
        let mut outbox = Outbox::default();
        assert_eq!(outbox.oldest_wait(Instant::now()), None);
        let system = volley::ActorSystem::new("sysmsg-test").unwrap();
        let any = system.lookup("/user").unwrap().expect("the user guardian");
        for seq in 1..=5 {
            outbox.next_seq = seq;
            outbox.unacked.push_back(Pending {
                seq,
                kind: SystemKind::Watch,
                recipient: any.clone(),
                sender: None,
                payload: Vec::new(),
                queued_at: Instant::now(),
            });
        }
        outbox.acknowledge(3);
        assert_eq!(
            outbox.unacked.iter().map(|p| p.seq).collect::<Vec<_>>(),
            vec![4, 5]
        );
        outbox.acknowledge(2);
        assert_eq!(outbox.unacked.len(), 2, "an old ack changes nothing");
        let dropped = outbox.reset();
        assert_eq!(dropped.len(), 2);
        assert!(outbox.unacked.is_empty());
        assert_eq!(outbox.next_seq, 0);
    }
}
