//! Inbound connections: accept, check the handshake, then decode whole read
//! buffers of frames in one pass and deliver each message straight into the
//! recipient's mailbox (no actor hop per message: Akka.NET's reader went
//! through one, and its latency showed it).

use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

use volley::remote::{RemoteRef, RemoteRoute};
use volley::{ActorPath, DeadLetterReason};

use crate::transport::association::Association;
use crate::transport::control::remote_spawn;
use crate::transport::control::remote_watch::NoSuchActor;
use crate::transport::control::reply_handles::NotTaken;
use crate::transport::control::system_messages::SystemMessageError;
use crate::transport::core::RemotingCore;
use crate::transport::core::NOT_CONNECTED_BACK;
use crate::transport::events::DisassociationReason;
use crate::transport::handshake::admission::{admit, authenticate, check, dials_back, not_gone};
use crate::transport::handshake::setup::{self, HandshakeError};
use crate::transport::inbound::delivery::{Deliver, Run, TypeCache};
use crate::transport::inbound::ends::count_what_is_left;
use crate::transport::inbound::guard::{log_limited, IdleWatch, InboundGuard};
use crate::transport::inbound::protocol_error;
use crate::transport::limits::LimitError;
use crate::transport::liveness::reachability::PeerDetector;
use crate::transport::outbound::route::RouteHint;
use crate::transport::refs::tables::ImportTable;
use crate::transport::registry::DeliverError;
use crate::wire::{
    Address, DecodeError, Decoder, DecoderConfig, DisassociateReason, HandshakeStatus, Lane, Pdu,
    Reply, LARGE_MAX_FRAME_LEN,
};
use std::sync::atomic::Ordering;

/// Read buffer size: large enough that one read usually carries hundreds of
/// small frames.
const READ_CHUNK: usize = 256 * 1024;

pub(crate) async fn run_listener(listener: TcpListener, core: Arc<RemotingCore>) {
    let guard = InboundGuard::new(&core.settings.limits);
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                // Over a cap, the stream is closed here, unread.
                if let Some(admission) = guard.admit(peer.ip()) {
                    let core2 = core.clone();
                    let task = tokio::spawn(admission.run(async move {
                        if let Err(e) = serve(stream, &core2).await {
                            log_limited!(warn, %peer, "inbound connection closed: {e}");
                        }
                    }));
                    core.track(task);
                }
            }
            Err(e) => {
                log_limited!(warn, "accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
        if core.is_shut_down() {
            return;
        }
    }
}

/// Why an inbound connection ended other than by the peer closing it
/// between frames.
#[derive(Debug, thiserror::Error)]
pub(in crate::transport) enum InboundError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("handshake timed out")]
    HandshakeTimeout,
    #[error("TLS handshake failed: {0}")]
    Tls(std::io::Error),
    #[error("bad handshake: {0}")]
    BadHandshake(#[from] HandshakeError),
    #[error("refused {from}: {reason}")]
    Refused { from: Address, reason: String },
    #[error("protocol error from {peer}: {error}")]
    Protocol { peer: Address, error: DecodeError },
    #[error("{0} closed the connection inside a frame")]
    ClosedInFrame(Address),
    #[error("the peer's address {0} has no valid root path")]
    BadPeerAddress(Address),
    #[error("{0}")]
    SystemMessage(#[from] SystemMessageError),
    #[error("{0}")]
    Limit(#[from] LimitError),
}

impl InboundError {
    /// The codec error past the preamble that ended the connection, if
    /// one did: the peer is told of it (`protocol_error.rs`).
    fn codec_error(&self) -> Option<&DecodeError> {
        let error = match self {
            InboundError::Protocol { error, .. } => error,
            InboundError::BadHandshake(HandshakeError::Decode(error)) => error,
            _ => return None,
        };
        protocol_error::deserves_telling(error).then_some(error)
    }
}

async fn serve(stream: TcpStream, core: &Arc<RemotingCore>) -> Result<(), InboundError> {
    stream.set_nodelay(true)?;
    let Some(tls) = &core.tls else {
        return serve_on(stream, core).await;
    };
    // The TLS handshake comes first: a peer that does not speak TLS (a
    // plaintext preamble) fails here, before anything of it is read.
    let sealed = tokio::time::timeout(
        core.settings.handshake_timeout(),
        tls.acceptor().accept(stream),
    )
    .await
    .map_err(|_| InboundError::HandshakeTimeout)?
    .map_err(InboundError::Tls)?;
    serve_on(sealed, core).await
}

/// The volley handshake and the read loop, on a plain or TLS stream; a
/// peer whose bytes break the protocol is told so before the close.
async fn serve_on<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    core: &Arc<RemotingCore>,
) -> Result<(), InboundError> {
    let served = handshake_and_read(&mut stream, core).await;
    if let Some(error) = served.as_ref().err().and_then(InboundError::codec_error) {
        protocol_error::tell(&mut stream, error).await;
    }
    served
}

async fn handshake_and_read<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: &mut S,
    core: &Arc<RemotingCore>,
) -> Result<(), InboundError> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let request = tokio::time::timeout(
        core.settings.handshake_timeout(),
        setup::read_request(&mut stream, &mut buf),
    )
    .await
    .map_err(|_| InboundError::HandshakeTimeout)??;
    // Nothing happens for a peer before it is answered (and, with a
    // secret, has proved it): the checks here change no state.
    let checked = check(core, &request).and_then(|()| not_gone(core, &request));
    if let Err((status, reason)) = checked {
        setup::respond(&mut stream, status, &core.address, core.uid, &reason, None)
            .await
            .ok();
        return Err(InboundError::Refused {
            from: request.from,
            reason,
        });
    }
    match &core.secret {
        Some(secret) => authenticate(core, secret, &request, &mut stream, &mut buf).await?,
        None => {
            let accepted = HandshakeStatus::Accepted;
            setup::respond(&mut stream, accepted, &core.address, core.uid, "", None).await?
        }
    }
    // Whether to dial back is decided after answering: a node that dialed
    // this one without knowing it may be checking this node's address in
    // turn, and would not answer that check until its own handshake is
    // answered (`probe.rs`). Frames wait in the socket meanwhile.
    let dial_back = dials_back(core, &request).await;
    // Past the response, a refusal can only close the connection.
    admit(core, &request, dial_back).map_err(|(_, reason)| InboundError::Refused {
        from: request.from.clone(),
        reason,
    })?;
    tracing::debug!(from = %request.from, uid = request.uid, lane = ?request.lane, "inbound lane accepted");
    read_loop(stream, buf, core, request.lane, request.from, request.uid).await
}

async fn read_loop(
    mut stream: impl AsyncRead + Unpin,
    mut buf: BytesMut,
    core: &Arc<RemotingCore>,
    lane: Lane,
    peer: Address,
    peer_uid: u64,
) -> Result<(), InboundError> {
    let mut config = DecoderConfig::for_lane(lane);
    if lane == Lane::Large {
        config.max_frame_len = core.settings.max_frame_size;
    }
    let decoder = Decoder::new(config);
    let mut imports = ImportTable::new(&core.settings.limits, &core.import_meter);
    let association = core.associations.find(&peer);
    let mut peer = Peer {
        root: ActorPath::parse(&format!("{peer}/"))
            .map_err(|_| InboundError::BadPeerAddress(peer.clone()))?,
        // Only a node this node dials back is judged: a claim it does not
        // dial back must not take one of the detectors' slots.
        detector: association
            .as_ref()
            .and_then(|_| core.reachability.peer(&peer)),
        address: peer,
        uid: peer_uid,
        lane,
        association: association.clone(),
        active: false,
        reply_route: None,
        ack_due: None,
    };
    let _reader = association.map(|a| ReaderGuard::new(core, a, peer_uid));
    let association = _reader.as_ref().map(|r| &*r.association);
    // Ended, with a reader blocked in its read woken, once the
    // incarnation is gone (`inbound_end.rs`).
    let life = core.join_inbound(&peer.address, peer_uid);
    let mut ended = std::pin::pin!(life.ended());
    let mut types = TypeCache::default();
    let mut idle = IdleWatch::new(&peer.address, peer_uid);
    // What a run is delivered with; a macro because `handle` below needs
    // the import table mutably between two runs.
    macro_rules! to {
        () => {
            &mut Deliver {
                core,
                imports: &mut imports,
                types: &mut types,
                peer: &peer.address,
                root: &peer.root,
                reply_route: &peer.reply_route,
            }
        };
    }
    let metered = core.associations.is_metered();
    // Bytes still to throw away of a large-lane frame over this node's
    // `max_frame_size` (the peer's may be larger): that message is lost,
    // not the connection and what follows it.
    let mut skip = 0usize;
    loop {
        // Before anything of this read is decoded: a gone incarnation's
        // bytes are counted, never delivered.
        if life.has_ended() {
            let lost = count_what_is_left(&mut stream, &mut buf, &decoder, skip).await;
            core.lost_with_gone_incarnation(&peer.address, peer_uid, lost);
            return Ok(());
        }
        let n = skip.min(buf.len());
        buf.advance(n);
        skip -= n;
        let mut frames = decoder.frames(&buf);
        let mut run = Run::new();
        let mut decoded_frames = 0u64;
        // The stream cannot be trusted past a bad frame: what came before
        // it is delivered, then the connection ends.
        macro_rules! bad_frame {
            ($e:expr) => {{
                run.flush(to!());
                return Err(InboundError::Protocol {
                    peer: peer.address,
                    error: $e,
                });
            }};
        }
        // The hot kinds are decoded by their own functions, never moved
        // around inside a `Pdu` (measured: that move alone cost about 15
        // instructions per message).
        while let Some(frame) = frames.next_raw() {
            decoded_frames += 1;
            let frame = match frame {
                Ok(frame) => frame,
                Err(DecodeError::FrameTooLong { len, max })
                    if lane == Lane::Large && len <= LARGE_MAX_FRAME_LEN as usize =>
                {
                    run.flush(to!());
                    let why = format!("a frame of {len} bytes is over max_frame_size ({max})");
                    core.undeliverable(&peer.address, &why);
                    skip = 4 + len;
                    break;
                }
                Err(e) => bad_frame!(e),
            };
            // User messages are nearly every frame: they join the run.
            if let Some(m) = frame.user_message() {
                match m {
                    Ok(m) => run.push(m, to!()),
                    Err(e) => bad_frame!(e),
                }
                continue;
            }
            // Asks' requests join runs too: their reply handles need no
            // declaration in between.
            if let Some(r) = frame.request() {
                match r {
                    Ok(r) => {
                        peer.make_reply_route(core);
                        run.push_request(r, to!())
                    }
                    Err(e) => bad_frame!(e),
                }
                continue;
            }
            match frame.decode(decoder.config()) {
                Ok(Pdu::TracedUserMessage(t)) => {
                    run.flush(to!());
                    to!().traced(t);
                }
                Ok(pdu) => {
                    // Whatever came before this frame is delivered first:
                    // a declaration may rebind an id the run uses.
                    run.flush(to!());
                    handle(core, &mut imports, &mut peer, pdu)?;
                    // It may have ended the incarnation (its peer's
                    // Disassociate): what follows it is not delivered.
                    if life.has_ended() {
                        break;
                    }
                }
                Err(e) => bad_frame!(e),
            }
        }
        if life.has_ended() {
            // The rest of this buffer is counted at the top of the loop.
            buf.advance(frames.consumed());
            continue;
        }
        run.flush(to!());
        if let (Some(ack), Some(association)) = (peer.ack_due.take(), association) {
            core.send_system_ack(association, peer.uid, ack);
        }
        if let Some(association) = association {
            // Traffic for idleness (`idle.rs`): anything on the user
            // lanes, on the control lane anything but heartbeats.
            if lane != Lane::Control || std::mem::take(&mut peer.active) {
                association.heard(core);
            }
        }
        let consumed = frames.consumed();
        let wanted = frames.pending_frame_len();
        buf.advance(consumed);
        let room = wanted.unwrap_or(0).max(READ_CHUNK / 4);
        if buf.capacity() - buf.len() < room {
            buf.reserve(room.max(READ_CHUNK));
        }
        let read = tokio::select! {
            biased;
            read = idle.read_buf(&mut stream, &mut buf) => read?,
            // Polled only while the read waits: the top of the loop ends
            // the connection.
            () = &mut ended => continue,
        };
        if let Some(association) = association.filter(|_| metered) {
            // Per read, not per frame: the frames decoded from the buffer
            // before this read.
            association
                .bytes_in
                .fetch_add(read as u64, Ordering::Relaxed);
            association
                .frames_in
                .fetch_add(decoded_frames, Ordering::Relaxed);
        }
        if read == 0 {
            return if buf.is_empty() {
                Ok(())
            } else {
                Err(InboundError::ClosedInFrame(peer.address))
            };
        }
    }
}

/// Counts an inbound connection among its incarnation's while it lives
/// (`RemotingCore::reader_started`), on every way out of the read loop.
struct ReaderGuard<'c> {
    core: &'c RemotingCore,
    association: Arc<Association>,
    uid: u64,
}

impl<'c> ReaderGuard<'c> {
    fn new(core: &'c RemotingCore, association: Arc<Association>, uid: u64) -> Self {
        core.reader_started(&association, uid);
        ReaderGuard {
            core,
            association,
            uid,
        }
    }
}

impl Drop for ReaderGuard<'_> {
    fn drop(&mut self) {
        self.core.reader_ended(&self.association, self.uid);
    }
}

/// The node on the other end of an inbound connection.
struct Peer {
    address: Address,
    /// Its incarnation, from the handshake.
    uid: u64,
    /// The lane this connection carries.
    lane: Lane,
    /// The system-message ack to send once this read buffer is handled.
    ack_due: Option<u64>,
    /// Its association here, looked up once.
    association: Option<Arc<Association>>,
    /// Something but a heartbeat was read since the last read.
    active: bool,
    /// Its root path, for the paths of its reply handles.
    root: ActorPath,
    /// The route every reply handle it declares shares: replies are
    /// addressed by correlation id, so the handles need no state of their
    /// own, and a remote ask costs no route allocation here.
    reply_route: Option<Arc<dyn RemoteRoute>>,
    /// Its failure detector, fed by the heartbeats read here; `None` only
    /// when too many nodes are watched already.
    detector: Option<Arc<PeerDetector>>,
}

impl Peer {
    fn association(&self) -> Option<&Association> {
        self.association.as_deref()
    }

    fn reply_route(&mut self, core: &Arc<RemotingCore>) -> Arc<dyn RemoteRoute> {
        self.make_reply_route(core).clone()
    }

    fn make_reply_route(&mut self, core: &Arc<RemotingCore>) -> &Arc<dyn RemoteRoute> {
        // The association was looked up when the connection started;
        // without one, this node does not dial the peer back, and its asks
        // are refused.
        let association = &self.association;
        self.reply_route.get_or_insert_with(|| match association {
            Some(a) => RouteHint::new(core.clone(), Some(a.clone())),
            None => Arc::new(NoSuchActor {
                core: core.clone(),
                refused: Some(NOT_CONNECTED_BACK),
            }),
        })
    }
}

fn handle(
    core: &Arc<RemotingCore>,
    imports: &mut ImportTable,
    peer: &mut Peer,
    pdu: Pdu<'_>,
) -> Result<(), InboundError> {
    // Heartbeats, and the goodbye of a peer that stops its association,
    // are not traffic that starts this node's again.
    peer.active |= !matches!(
        pdu,
        Pdu::Heartbeat | Pdu::HeartbeatAck | Pdu::Disassociate(_)
    );
    match pdu {
        // The read loop delivers user messages itself (in runs, a traced
        // one alone); one that reaches here is delivered alone.
        Pdu::UserMessage(_) | Pdu::TracedUserMessage(_) | Pdu::Request(_) => {
            if matches!(pdu, Pdu::Request(_)) {
                peer.make_reply_route(core);
            }
            let mut types = TypeCache::default();
            let mut to = Deliver {
                core,
                imports,
                types: &mut types,
                peer: &peer.address,
                root: &peer.root,
                reply_route: &peer.reply_route,
            };
            match pdu {
                Pdu::UserMessage(m) => to.one(m),
                Pdu::TracedUserMessage(t) => to.traced(t),
                Pdu::Request(r) => to.request(r),
                _ => {}
            }
        }
        Pdu::Reply(r) => reply(core, imports, peer, r),
        Pdu::RefDeclaration(d) => {
            let mut selection = None;
            let found = core.resolve_declared(
                d.path,
                d.uid,
                &peer.address,
                peer.association.as_ref(),
                &mut selection,
            );
            match (found, selection) {
                (found, Some(path)) => {
                    let found = match found {
                        // A system message to a path with nobody there is
                        // answered (a watch with `Terminated`) until an
                        // actor lives there.
                        None if peer.lane == Lane::Control => {
                            NoSuchActor::placeholder(core, d.path, d.uid)
                        }
                        None => {
                            tracing::debug!(
                                path = d.path,
                                "declared ref is not here yet; its messages are dead letters until an actor is"
                            );
                            None
                        }
                        found => found,
                    };
                    imports.declare_selection(d.id.get(), path, found)?
                }
                (Some(actor), _) => imports.declare(d.id.get(), actor)?,
                (None, _) if peer.lane == Lane::Control => {
                    // A system message may name an actor that is not
                    // here (a watch of one that stopped): it is answered.
                    if let Some(placeholder) = NoSuchActor::placeholder(core, d.path, d.uid) {
                        imports.declare(d.id.get(), placeholder)?;
                    }
                }
                (None, _) => {
                    // A re-declaration that names nothing here unbinds the
                    // id: its messages must not reach what it named before.
                    imports.forget(d.id.get());
                    tracing::debug!(
                        path = d.path,
                        "declared ref is not here; its messages become dead letters"
                    );
                }
            }
        }
        Pdu::ReplyHandleDeclaration(d) => {
            let route = peer.reply_route(core);
            let handle =
                RemoteRef::reply_handle(&peer.root, d.correlation, core.system.clone(), route);
            imports.declare(d.id.get(), handle.to_any())?;
        }
        Pdu::SpawnRequest(r) => match peer.association {
            Some(_) => remote_spawn::spawn_here(core, &peer.address, r),
            None => core.trust.refused(
                core,
                &peer.address,
                "a spawn request from a peer this node does not dial back",
            ),
        },
        Pdu::SpawnResponse(r) => remote_spawn::complete(core, &peer.address, r),
        Pdu::Heartbeat => {
            if let Some(detector) = &peer.detector {
                detector.heartbeat(Instant::now());
            }
            crate::transport::liveness::rtt::answer_heartbeat(core, &peer.address);
        }
        // Times this node's heartbeat; the detector judges arrivals only.
        Pdu::HeartbeatAck => crate::transport::liveness::rtt::ack_heard(core, &peer.address),
        Pdu::Disassociate(d) => {
            log_limited!(info, peer = %peer.address, reason = ?d.reason, text = d.text, "peer disassociated");
            if let Some(association) = peer.association() {
                match d.reason {
                    // Acted on when the node's last connection ends, after
                    // what its other lanes still carry.
                    DisassociateReason::Shutdown => core.goodbye_heard(association, peer.uid),
                    DisassociateReason::Quarantined => {
                        core.peer_left(association, peer.uid, DisassociationReason::Quarantined)
                    }
                    // Its heartbeats stop with its association: not a
                    // silence to judge.
                    DisassociateReason::Idle => core.reachability.pause(&peer.address),
                    _ => {}
                }
            }
        }
        Pdu::SystemMessage(m) => match peer.association() {
            Some(association) => {
                match core.receive_system_message(association, peer.uid, imports, m) {
                    Ok(Some(ack)) => peer.ack_due = Some(ack),
                    Ok(None) => {}
                    Err(e) => return Err(InboundError::SystemMessage(e)),
                }
            }
            // Its acks could not go back: the sender would resend forever.
            None => core.trust.refused(
                core,
                &peer.address,
                "a system message from a peer this node does not dial back",
            ),
        },
        Pdu::SystemAck(a) => {
            if let Some(association) = peer.association() {
                core.receive_system_ack(association, peer.uid, a.ack);
            }
        }
        // Everything before it on this connection is delivered (`flush.rs`).
        Pdu::Flush(f) => core.answer_flush(&peer.address, f.id),
        Pdu::FlushAck(a) => core.flush_acked(&peer.address, a.id),
        Pdu::HandshakeRequest(_) | Pdu::HandshakeResponse(_) | Pdu::AuthProof(_) => {
            log_limited!(warn, peer = %peer.address, "handshake frame after the handshake; ignored");
        }
    }
    Ok(())
}

/// A reply to one of this node's asks, addressed by its correlation id.
fn reply(core: &Arc<RemotingCore>, imports: &ImportTable, from: &Peer, r: Reply<'_>) {
    let peer = &from.address;
    let Some(ty) = core.registry.by_wire_id.get(&r.type_id) else {
        core.undeliverable(peer, &format!("unknown message type id {}", r.type_id));
        return;
    };
    if r.serializer != ty.serializer {
        let e = DeliverError::WrongSerializer(r.serializer);
        core.undeliverable(peer, &format!("{} ({}): {e}", ty.name, r.type_id));
        return;
    }
    // Only the node the ask went to may answer it, unless the operator
    // lets a node it was forwarded to answer too.
    let from_association = match core.trust.replies_from_any_node {
        true => None,
        // Ids start at 1: without an association, no request went there.
        false => Some(
            from.association
                .as_ref()
                .map(|a| a.id)
                .or_else(|| core.associations.find(peer).map(|a| a.id))
                .unwrap_or(0),
        ),
    };
    let handle = match core.reply_handles.take(r.correlation, from_association) {
        Ok(handle) => handle,
        Err(NotTaken::NotWaiting) => {
            // The ask timed out or was answered already: an ordinary dead
            // letter, as a late reply is in Akka.
            tracing::debug!(%peer, correlation = r.correlation, "reply to an ask that no longer waits");
            core.count_dead_letter(peer, DeadLetterReason::AskCompleted);
            return;
        }
        Err(NotTaken::WrongNode) => {
            let what = "a reply to an ask that went to another node";
            return core.trust.refused(core, peer, what);
        }
    };
    if let Err(e) = (ty.deliver_to)(r.payload, imports, &handle) {
        core.undeliverable(peer, &format!("{} ({}): {e}", ty.name, r.type_id));
    }
}
