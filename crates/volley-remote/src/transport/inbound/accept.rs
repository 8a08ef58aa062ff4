//! Inbound connections up to their first frame: accept within the
//! guard's caps, TLS, the accepting side of the handshake, and the checks
//! that decide whether the peer is let in. What follows is the
//! [`Reader`](super::reader::Reader)'s.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

use crate::transport::admission::checks::{admit, authenticate, check, dials_back, not_gone};
use crate::transport::handshake::setup::{self, HandshakeError, Local};
use crate::transport::inbound::guard::InboundGuard;
use crate::transport::inbound::protocol_error;
use crate::transport::inbound::reader::{Reader, READ_CHUNK};
use crate::transport::inbound::stages::{Stage, Stages};
use crate::transport::inbound::InboundContext;
use crate::transport::outbound::association::system_buffers::SystemMessageError;
use crate::transport::refs::limit_error::LimitError;
use crate::transport::support::log_limited;
use crate::wire::{Address, DecodeError};

pub(crate) async fn run_listener(listener: TcpListener, core: Arc<impl InboundContext>) {
    let guard = InboundGuard::new(&core.settings().limits);
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                // Over a cap, the stream is closed here, unread.
                if let Some(admission) = guard.admit(peer.ip()) {
                    tracing::trace!(%peer, open = admission.open(), "inbound connection accepted");
                    let mut stages = Stages::start(peer);
                    let core2 = core.clone();
                    let task = tokio::spawn(admission.run(async move {
                        if let Err(e) = serve(stream, &core2, &mut stages).await {
                            log_limited!(warn, %peer, %stages, "inbound connection closed: {e}");
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
    /// one did: the peer is told of it (`inbound/protocol_error.rs`).
    fn codec_error(&self) -> Option<&DecodeError> {
        let error = match self {
            InboundError::Protocol { error, .. } => error,
            InboundError::BadHandshake(HandshakeError::Decode(error)) => error,
            _ => return None,
        };
        protocol_error::deserves_telling(error).then_some(error)
    }
}

async fn serve(
    stream: TcpStream,
    core: &Arc<impl InboundContext>,
    stages: &mut Stages,
) -> Result<(), InboundError> {
    stages.reached(Stage::TaskRuns);
    stream.set_nodelay(true)?;
    let Some(tls) = core.tls() else {
        return serve_on(stream, core, stages).await;
    };
    // The TLS handshake comes first: a peer that does not speak TLS (a
    // plaintext preamble) fails here, before anything of it is read.
    let sealed = tokio::time::timeout(
        core.settings().handshake_timeout,
        tls.acceptor().accept(stream),
    )
    .await
    .map_err(|_| InboundError::HandshakeTimeout)?
    .map_err(InboundError::Tls)?;
    stages.reached(Stage::Tls);
    serve_on(sealed, core, stages).await
}

/// The volley handshake and the read loop, on a plain or TLS stream; a
/// peer whose bytes break the protocol is told so before the close.
async fn serve_on<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    core: &Arc<impl InboundContext>,
    stages: &mut Stages,
) -> Result<(), InboundError> {
    let served = handshake_and_read(&mut stream, core, stages).await;
    if let Some(error) = served.as_ref().err().and_then(InboundError::codec_error) {
        protocol_error::tell(&mut stream, error).await;
    }
    served
}

async fn handshake_and_read<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: &mut S,
    core: &Arc<impl InboundContext>,
    stages: &mut Stages,
) -> Result<(), InboundError> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut request = tokio::time::timeout(
        core.settings().handshake_timeout,
        setup::read_request(&mut stream, &mut buf),
    )
    .await
    .map_err(|_| InboundError::HandshakeTimeout)??;
    stages.reached(Stage::RequestRead);
    // Nothing happens for a peer before it is answered (and, with a
    // secret, has proved it): the checks here change no state.
    let checked = check(&**core, &request).and_then(|()| not_gone(&**core, &request));
    let local = Local {
        address: core.address(),
        uid: core.uid(),
        stamp: request.answer_stamp(core.stamp()),
    };
    if let Err((status, reason)) = checked {
        setup::respond(&mut stream, status, &local, &reason, None)
            .await
            .ok();
        return Err(InboundError::Refused {
            from: request.from,
            reason,
        });
    }
    match core.secret() {
        Some(secret) => authenticate(&**core, secret, &request, &mut stream, &mut buf)
            .await
            .map_err(|e| match e {
                HandshakeError::TimedOut => InboundError::HandshakeTimeout,
                e => e.into(),
            })?,
        None => setup::accept(&mut stream, &local, None).await?,
    }
    stages.reached(Stage::Answered);
    // A stamped initiator tells its stamp once answered (after its proof).
    // One that closes first went away (killed, or its dial timed out):
    // before stamps it would have closed an admitted connection as quietly.
    let stamped = tokio::time::timeout(
        core.settings().handshake_timeout,
        setup::read_initiator_stamp(&mut stream, &mut buf, &mut request),
    )
    .await
    .map_err(|_| InboundError::HandshakeTimeout)?;
    if let Err(HandshakeError::Closed) = stamped {
        tracing::debug!(from = %request.from, uid = request.uid, %stages, "closed before telling its stamp");
        return Ok(());
    }
    stamped?;
    stages.reached(Stage::StampRead);
    // Whether to dial back is decided after answering: a node that dialed
    // this one without knowing it may be checking this node's address in
    // turn, and would not answer that check until its own handshake is
    // answered (`admission/probe.rs`). Frames wait in the socket meanwhile.
    let dial_back = dials_back(&**core, &request).await;
    // Past the response, a refusal can only close the connection.
    admit(core, &request, dial_back).map_err(|(_, reason)| InboundError::Refused {
        from: request.from.clone(),
        reason,
    })?;
    tracing::debug!(from = %request.from, uid = request.uid, lane = ?request.lane, %stages, "inbound lane accepted");
    Reader::run(core, request.lane, request.from, request.uid, stream, buf).await
}
