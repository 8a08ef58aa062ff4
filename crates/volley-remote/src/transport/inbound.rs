//! Inbound connections: accept, check the handshake, then decode whole read
//! buffers of frames in one pass and deliver each message straight into the
//! recipient's mailbox (no actor hop per message: Akka.NET lost hundreds of
//! microseconds per message to a reader that went through one).

use std::sync::Arc;

use bytes::{Buf, BytesMut};
use std::sync::atomic::Ordering;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use volley::remote::wire_refs::ImportTable;
use volley::remote::RemoteRef;
use volley::{ActorPath, DeadLetterReason};

use super::delivery::{Deliver, Run, TypeCache};
use super::handshake::{self, Request};
use super::registry::DeliverError;
use super::Shared;
use crate::serialization::SerializerId;
use crate::wire::{
    Address, Decoder, DecoderConfig, HandshakeStatus, Lane, Pdu, Reply, SpawnRequest,
    SpawnResponse, SpawnResult, PROTOCOL_VERSION,
};

/// Read buffer size: large enough that one read usually carries hundreds of
/// small frames.
const READ_CHUNK: usize = 256 * 1024;

pub(crate) async fn run_listener(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let shared2 = shared.clone();
                let task = tokio::spawn(async move {
                    if let Err(e) = serve(stream, &shared2).await {
                        tracing::warn!(%peer, "inbound connection closed: {e}");
                    }
                });
                shared.track(task.abort_handle());
            }
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
        if shared.is_shut_down() {
            return;
        }
    }
}

async fn serve(mut stream: TcpStream, shared: &Arc<Shared>) -> Result<(), String> {
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let request = tokio::time::timeout(
        shared.settings.handshake_timeout(),
        handshake::read_request(&mut stream, &mut buf),
    )
    .await
    .map_err(|_| "handshake timed out".to_string())?
    .map_err(|e| format!("bad handshake: {e}"))?;
    if let Err((status, reason)) = check(shared, &request) {
        handshake::respond(&mut stream, status, &shared.address, shared.uid, &reason)
            .await
            .ok();
        return Err(format!("refused {}: {reason}", request.from));
    }
    handshake::respond(
        &mut stream,
        HandshakeStatus::Accepted,
        &shared.address,
        shared.uid,
        "",
    )
    .await
    .map_err(|e| e.to_string())?;
    tracing::debug!(from = %request.from, uid = request.uid, lane = ?request.lane, "inbound lane accepted");
    read_loop(stream, buf, shared, request.lane, request.from).await
}

fn check(shared: &Shared, r: &Request) -> Result<(), (HandshakeStatus, String)> {
    if r.version != PROTOCOL_VERSION {
        return Err((
            HandshakeStatus::IncompatibleVersion,
            format!("protocol version {} is not {}", r.version, PROTOCOL_VERSION),
        ));
    }
    if r.to != shared.address {
        return Err((
            HandshakeStatus::WrongAddress,
            format!("this node is {}, not {}", shared.address, r.to),
        ));
    }
    let expected = shared.settings.auth_token.as_deref().map(str::as_bytes);
    if expected.is_some() && r.auth_token.as_deref() != expected {
        return Err((
            HandshakeStatus::Unauthorized,
            "wrong or missing auth token".into(),
        ));
    }
    Ok(())
}

async fn read_loop(
    mut stream: TcpStream,
    mut buf: BytesMut,
    shared: &Arc<Shared>,
    lane: Lane,
    peer: Address,
) -> Result<(), String> {
    let mut config = DecoderConfig::for_lane(lane);
    if lane == Lane::Large {
        config.max_frame_len = shared.settings.max_frame_size;
    }
    let decoder = Decoder::new(config);
    let mut imports = ImportTable::new();
    let mut peer = Peer {
        root: ActorPath::parse(&format!("{peer}/")).map_err(|e| e.to_string())?,
        address: peer,
        slot: None,
    };
    let mut types = TypeCache::default();
    // What a run is delivered with; a macro because `handle` below needs
    // the import table mutably between two runs.
    macro_rules! to {
        () => {
            &mut Deliver {
                shared,
                imports: &imports,
                types: &mut types,
                peer: &peer.address,
            }
        };
    }
    loop {
        let mut frames = decoder.frames(&buf);
        let mut run = Run::new();
        for decoded in &mut frames {
            match decoded {
                // User messages are nearly every frame: they join the run.
                Ok(Pdu::UserMessage(m)) => run.push(m, to!()),
                Ok(pdu) => {
                    // Whatever came before this frame is delivered first:
                    // a declaration may rebind an id the run uses.
                    run.flush(to!());
                    handle(shared, &mut imports, &mut peer, pdu)
                }
                Err(e) => {
                    run.flush(to!());
                    // The stream cannot be trusted past a bad frame.
                    return Err(format!("protocol error from {}: {e}", peer.address));
                }
            }
        }
        run.flush(to!());
        let consumed = frames.consumed();
        let wanted = frames.pending_frame_len();
        buf.advance(consumed);
        let room = wanted.unwrap_or(0).max(READ_CHUNK / 4);
        if buf.capacity() - buf.len() < room {
            buf.reserve(room.max(READ_CHUNK));
        }
        if stream.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
            return if buf.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} closed the connection inside a frame",
                    peer.address
                ))
            };
        }
    }
}

/// The node on the other end of an inbound connection.
struct Peer {
    address: Address,
    /// Its association slot here, looked up once.
    slot: Option<usize>,
    /// Its root path, for the paths of its reply handles.
    root: ActorPath,
}

fn handle(shared: &Arc<Shared>, imports: &mut ImportTable, peer: &mut Peer, pdu: Pdu<'_>) {
    match pdu {
        // The read loop delivers user messages in runs; one that reaches
        // here is delivered as a run of one.
        Pdu::UserMessage(m) => {
            let mut run = Run::new();
            let mut types = TypeCache::default();
            let mut to = Deliver {
                shared,
                imports,
                types: &mut types,
                peer: &peer.address,
            };
            run.push(m, &mut to);
            run.flush(&mut to);
        }
        Pdu::Reply(r) => reply(shared, imports, &peer.address, r),
        Pdu::RefDeclaration(d) => {
            match shared.resolve_declared(d.path, d.uid, &peer.address, &mut peer.slot) {
                Some(actor) => imports.declare(d.id.get(), actor),
                None => {
                    tracing::debug!(
                        path = d.path,
                        "declared ref is not here; its messages become dead letters"
                    );
                }
            }
        }
        Pdu::ReplyHandleDeclaration(d) => {
            let handle = RemoteRef::reply_handle(
                &peer.root,
                d.correlation,
                shared.system.clone(),
                shared.clone(),
            );
            if peer.slot.is_none() {
                peer.slot = shared.association_slot(&peer.address).ok();
            }
            if let Some(slot) = peer.slot {
                handle.route_hint.store(slot as u64 + 1, Ordering::Relaxed);
            }
            imports.declare(d.id.get(), handle.to_any());
        }
        Pdu::SpawnRequest(r) => spawn_here(shared, &peer.address, r),
        Pdu::SpawnResponse(r) => complete_spawn(shared, r),
        Pdu::Heartbeat | Pdu::HeartbeatAck => {}
        Pdu::Disassociate(d) => {
            tracing::info!(peer = %peer.address, reason = ?d.reason, text = d.text, "peer disassociated");
        }
        Pdu::SystemMessage(_) | Pdu::SystemAck(_) => {
            tracing::debug!(peer = %peer.address, "system messages are not handled yet");
        }
        Pdu::HandshakeRequest(_) | Pdu::HandshakeResponse(_) => {
            tracing::warn!(peer = %peer.address, "handshake frame after the handshake; ignored");
        }
    }
}

/// A reply to one of this node's asks, addressed by its correlation id.
fn reply(shared: &Arc<Shared>, imports: &ImportTable, peer: &Address, r: Reply<'_>) {
    let Some(ty) = shared.registry.by_wire_id.get(&r.type_id) else {
        shared.undeliverable(peer, &format!("unknown message type id {}", r.type_id));
        return;
    };
    if r.serializer != ty.serializer {
        let e = DeliverError::WrongSerializer(r.serializer);
        shared.undeliverable(peer, &format!("{} ({}): {e}", ty.name, r.type_id));
        return;
    }
    let Some(handle) = shared.take_reply_handle(r.correlation) else {
        // The ask timed out or was answered already: an ordinary dead
        // letter, as a late reply is in Akka.
        tracing::debug!(%peer, correlation = r.correlation, "reply to an ask that no longer waits");
        shared.count_dead_letter(peer, DeadLetterReason::AskCompleted);
        return;
    };
    if let Err(e) = (ty.deliver_to)(r.payload, imports, &handle) {
        shared.undeliverable(peer, &format!("{} ({}): {e}", ty.name, r.type_id));
    }
}

fn spawn_here(shared: &Arc<Shared>, peer: &Address, r: SpawnRequest<'_>) {
    let outcome: Result<(String, u64), String> = if !shared.settings.remote_spawn {
        Err("remote spawn is disabled on this node (remote.remote_spawn = false)".into())
    } else if r.serializer != SerializerId::BINCODE {
        Err(format!(
            "unsupported serializer {} for spawn arguments",
            r.serializer
        ))
    } else {
        match shared.registry.kinds.get(r.kind) {
            None => Err(format!(
                "no spawnable kind {:?} is registered on this node",
                r.kind
            )),
            Some(make) => {
                let name = (!r.name.is_empty()).then_some(r.name);
                make(&shared.system, r.props, name)
                    .map(|actor| (shared.export_path(&actor), actor.uid()))
            }
        }
    };
    let result = match &outcome {
        Ok((path, uid)) => SpawnResult::Spawned { path, uid: *uid },
        Err(error) => SpawnResult::Failed { error },
    };
    let response = Pdu::SpawnResponse(SpawnResponse {
        request_id: r.request_id,
        result,
    });
    let sent = shared
        .association(peer)
        .and_then(|a| a.control().send_pdu(&response));
    if let Err(e) = sent {
        tracing::warn!(%peer, "cannot answer spawn request: {e}");
    }
}

fn complete_spawn(shared: &Arc<Shared>, r: SpawnResponse<'_>) {
    let outcome = match r.result {
        SpawnResult::Spawned { path, uid } => Ok((path.to_string(), uid)),
        SpawnResult::Failed { error } => Err(error.to_string()),
    };
    shared.complete_spawn(r.request_id, outcome);
}

impl Shared {
    pub(crate) fn undeliverable(&self, peer: &Address, why: &str) {
        if self.may_log() {
            tracing::warn!(%peer, "undeliverable remote message: {why}");
        }
        self.count_dead_letter(peer, DeadLetterReason::Undeliverable);
    }
}
