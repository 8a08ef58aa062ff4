//! Connection set-up: preamble and handshake, both directions, with the
//! challenge-response of `handshake/auth.rs` when a shared secret is configured.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use tokio::net::TcpStream;

use crate::transport::handshake::auth::{self, Mac, Nonce, Role, Secret, Transcript};
use crate::transport::handshake::tls::TlsSession;
use crate::transport::handshake::HandshakeContext;
use crate::transport::incarnation::Incarnation;
use crate::wire::{
    Address, AuthProof, DecodeError, Decoder, DecoderConfig, Encoder, Features, HandshakeRequest,
    HandshakeResponse, HandshakeStatus, IncarnationStamp, Lane, Pdu, Preamble, AUTH_MAC_LEN,
    AUTH_NONCE_LEN, HANDSHAKE_VERSION_STAMPED, PREAMBLE_LEN, PROTOCOL_VERSION,
};

/// Why a connection did not come up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Decode(#[from] DecodeError),
    #[error("peer refused the handshake: {status:?} {reason}")]
    Refused {
        status: HandshakeStatus,
        reason: String,
    },
    #[error("unexpected first frame: {0}")]
    Unexpected(&'static str),
    #[error("connection closed during the handshake")]
    Closed,
    #[error("handshake timed out")]
    TimedOut,
    #[error("authentication failed: {0}")]
    Unauthenticated(&'static str),
    #[error("{0}")]
    Auth(#[from] auth::AuthError),
}

/// The initiator's view of an accepted handshake.
pub(crate) struct Accepted {
    pub(crate) peer_uid: u64,
    /// When that incarnation started, if its response told it
    /// (`liveness/order.rs`).
    pub(crate) peer_stamp: Option<u64>,
    /// What the acceptor advertised it decodes beyond the frames every
    /// version-1 peer does.
    pub(crate) features: Features,
}

/// The acceptor's view of a request.
pub(crate) struct Request {
    pub(crate) lane: Lane,
    pub(crate) from: Address,
    pub(crate) uid: u64,
    pub(crate) to: Address,
    /// The initiator's challenge, if it sent one (checked by `check`).
    pub(crate) challenge: Option<Vec<u8>>,
    pub(crate) version: u8,
    /// When the initiator's incarnation started, once its stamp frame,
    /// which follows this node's response to a stamped request, was read
    /// ([`read_initiator_stamp`]).
    pub(crate) stamp: Option<u64>,
}

impl Request {
    /// This node's stamp if the request asks for one in the response: a
    /// stamped request gets a stamped response.
    pub(crate) fn answer_stamp(&self, local_stamp: u64) -> Option<u64> {
        self.is_stamped().then_some(local_stamp)
    }

    /// A request of the stamped version: after this node's answer, the
    /// initiator tells its stamp.
    pub(crate) fn is_stamped(&self) -> bool {
        self.version == HANDSHAKE_VERSION_STAMPED
    }

    /// The initiator's incarnation, as the request tells it.
    pub(crate) fn incarnation(&self) -> Incarnation {
        Incarnation::new(self.uid, self.stamp)
    }
}

/// Reads until one whole frame is buffered and hands it to `f`.
async fn read_one<S: AsyncRead + Unpin, T>(
    stream: &mut S,
    buf: &mut BytesMut,
    decoder: &Decoder,
    f: impl Fn(Pdu<'_>) -> Result<T, HandshakeError>,
) -> Result<T, HandshakeError> {
    loop {
        if let Some((pdu, used)) = decoder.decode_frame(buf)? {
            let out = f(pdu);
            buf.advance(used);
            return out;
        }
        if stream.read_buf(buf).await? == 0 {
            return Err(HandshakeError::Closed);
        }
    }
}

/// A connection this node opened and handshook.
pub(crate) struct Dialed {
    pub(crate) stream: TcpStream,
    /// The TLS session to write through, when the transport runs TLS.
    pub(crate) tls: Option<TlsSession>,
    pub(crate) accepted: Accepted,
}

/// Opens a TCP connection to `remote`, with TLS if configured, and
/// handshakes on it as the initiator of `lane` (`connect`), telling this
/// node's stamp. A node that answers `IncompatibleVersion` speaks only
/// handshake version 1: it is dialed again at once, without the stamp.
pub(crate) async fn dial(
    core: &(impl HandshakeContext + ?Sized),
    remote: &Address,
    lane: Lane,
) -> Result<Dialed, HandshakeError> {
    match dial_telling(core, remote, lane, Some(core.stamp())).await {
        Err(HandshakeError::Refused {
            status: HandshakeStatus::IncompatibleVersion,
            reason,
        }) => {
            tracing::debug!(%remote, ?lane, "the peer refused a stamped handshake ({reason}): dialing it again with handshake version 1");
            dial_telling(core, remote, lane, None).await
        }
        dialed => dialed,
    }
}

/// [`dial`], telling `stamp` if given (handshake version 2), else with a
/// handshake of version 1.
async fn dial_telling(
    core: &(impl HandshakeContext + ?Sized),
    remote: &Address,
    lane: Lane,
    stamp: Option<u64>,
) -> Result<Dialed, HandshakeError> {
    let stream = TcpStream::connect((remote.host(), remote.port())).await?;
    stream.set_nodelay(true)?;
    let local = Local {
        address: core.address(),
        uid: core.uid(),
        stamp,
    };
    let secret = core.secret();
    match core.tls() {
        None => {
            let (stream, accepted) = connect(stream, remote, lane, &local, secret).await?;
            Ok(Dialed {
                stream,
                tls: None,
                accepted,
            })
        }
        Some(tls) => {
            let name = crate::transport::handshake::tls::server_name(remote.host())?;
            let sealed = tls.connector().connect(name, stream).await?;
            let (sealed, accepted) = connect(sealed, remote, lane, &local, secret).await?;
            let (stream, session) = sealed.into_inner();
            Ok(Dialed {
                stream,
                tls: Some(session),
                accepted,
            })
        }
    }
}

/// Who dials: this node's address and incarnation, and the stamp it
/// tells, if it tells one.
pub(crate) struct Local<'a> {
    pub(crate) address: &'a Address,
    pub(crate) uid: u64,
    pub(crate) stamp: Option<u64>,
}

/// What the initiator learns from an accepted response.
struct Answer {
    peer_uid: u64,
    /// The response is of the stamped version: its stamp frame follows.
    stamped: bool,
    auth: Option<Vec<u8>>,
    features: Features,
}

/// Connects as the initiator of one lane, telling `local.stamp` if given
/// (a handshake of version [`HANDSHAKE_VERSION_STAMPED`]: the acceptor's
/// stamp follows its response, this side's follows its proof, or the
/// response if there is no secret). With a secret, the acceptor's proof
/// is checked before anything but the request is sent, and this side's
/// proof is written before this returns.
pub(crate) async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    remote: &Address,
    lane: Lane,
    local: &Local<'_>,
    secret: Option<&Secret>,
) -> Result<(S, Accepted), HandshakeError> {
    let challenge = secret.map(|_| auth::nonce()).transpose()?;
    let mut out = BytesMut::with_capacity(256);
    Preamble::new(lane).encode(&mut out);
    let request = HandshakeRequest {
        version: local
            .stamp
            .map_or(PROTOCOL_VERSION, |_| HANDSHAKE_VERSION_STAMPED),
        from: local.address.clone(),
        uid: local.uid,
        to: remote.clone(),
        auth: challenge.as_ref().map(|c| &c[..]),
    };
    encode(&Pdu::HandshakeRequest(Box::new(request)), &mut out)?;
    stream.write_all(&out).await?;
    stream.flush().await?;
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let mut buf = BytesMut::with_capacity(1024);
    let answer = read_one(&mut stream, &mut buf, &decoder, |pdu| match pdu {
        Pdu::HandshakeResponse(r) if r.status == HandshakeStatus::Accepted => Ok(Answer {
            peer_uid: r.uid,
            stamped: local.stamp.is_some() && r.version == HANDSHAKE_VERSION_STAMPED,
            auth: r.auth.map(<[u8]>::to_vec),
            features: r.features(),
        }),
        Pdu::HandshakeResponse(r) => Err(HandshakeError::Refused {
            status: r.status,
            reason: r.reason.to_string(),
        }),
        _ => Err(HandshakeError::Unexpected("expected a handshake response")),
    })
    .await?;
    let peer_stamp = match answer.stamped {
        true => Some(read_stamp(&mut stream, &mut buf, &decoder).await?),
        false => None,
    };
    out.clear();
    if let (Some(secret), Some(challenge)) = (secret, &challenge) {
        let proof = initiator_proof(secret, &answer, remote, lane, local, challenge)?;
        encode(&Pdu::AuthProof(AuthProof { mac: proof }), &mut out)?;
    }
    if let (true, Some(stamp)) = (answer.stamped, local.stamp) {
        encode(&Pdu::IncarnationStamp(IncarnationStamp { stamp }), &mut out)?;
    }
    if !out.is_empty() {
        stream.write_all(&out).await?;
        // Nothing may stay in a TLS session's buffer: the session is
        // taken apart next.
        stream.flush().await?;
    }
    Ok((
        stream,
        Accepted {
            peer_uid: answer.peer_uid,
            peer_stamp,
            features: answer.features,
        },
    ))
}

/// Checks the acceptor's proof in `answer` and makes this side's.
fn initiator_proof(
    secret: &Secret,
    answer: &Answer,
    remote: &Address,
    lane: Lane,
    local: &Local<'_>,
    challenge: &Nonce,
) -> Result<Mac, HandshakeError> {
    let auth = answer.auth.as_deref().ok_or(HandshakeError::Unauthenticated(
        "the peer did not prove the shared secret (it has none configured, or is not a volley node of this cluster)",
    ))?;
    if auth.len() != AUTH_NONCE_LEN + AUTH_MAC_LEN {
        return Err(HandshakeError::Unauthenticated(
            "the peer's proof has the wrong length",
        ));
    }
    let (peer_nonce, peer_mac) = auth.split_at(AUTH_NONCE_LEN);
    let peer_nonce: Nonce = peer_nonce.try_into().expect("split at the nonce length");
    let transcript = Transcript {
        initiator: local.address,
        initiator_uid: local.uid,
        initiator_nonce: challenge,
        acceptor: remote,
        acceptor_uid: answer.peer_uid,
        acceptor_nonce: &peer_nonce,
        lane,
    };
    if !secret.verify(Role::Acceptor, &transcript, peer_mac) {
        return Err(HandshakeError::Unauthenticated(
            "the peer's proof of the shared secret is wrong (an impostor, or another secret)",
        ));
    }
    Ok(secret.prove(Role::Initiator, &transcript))
}

/// Reads the initiator's stamp, the frame after this node's answer to a
/// stamped request (after the initiator's proof, with a secret), and
/// records it in `request`; nothing for a request of version 1.
pub(crate) async fn read_initiator_stamp<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    request: &mut Request,
) -> Result<(), HandshakeError> {
    if request.is_stamped() {
        let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
        request.stamp = Some(read_stamp(stream, buf, &decoder).await?);
    }
    Ok(())
}

/// Reads the stamp frame that follows a stamped response, or the
/// initiator's answer to one.
async fn read_stamp<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    decoder: &Decoder,
) -> Result<u64, HandshakeError> {
    read_one(stream, buf, decoder, |pdu| match pdu {
        Pdu::IncarnationStamp(s) => Ok(s.stamp),
        _ => Err(HandshakeError::Unexpected(
            "expected the incarnation stamp after a stamped handshake",
        )),
    })
    .await
}

fn encode(pdu: &Pdu<'_>, out: &mut BytesMut) -> Result<(), HandshakeError> {
    Encoder::for_lane(Lane::Control)
        .encode(pdu, out)
        .map_err(|_| HandshakeError::Unexpected("cannot encode a handshake frame"))
}

/// Reads the preamble and the handshake request of an inbound connection.
/// Leaves whatever followed them in `buf`.
pub(crate) async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
) -> Result<Request, HandshakeError> {
    // Judged after every read: a wrong byte ends the connection as soon as
    // it arrives, not once six bytes have (a port scanner that sends one
    // byte and waits would hold the connection for the handshake timeout).
    let preamble = loop {
        if let Some(preamble) = Preamble::decode(buf)? {
            break preamble;
        }
        if stream.read_buf(buf).await? == 0 {
            return Err(HandshakeError::Closed);
        }
    };
    buf.advance(PREAMBLE_LEN);
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    read_one(stream, buf, &decoder, |pdu| match pdu {
        Pdu::HandshakeRequest(r) => Ok(Request {
            lane: preamble.lane,
            from: r.from.clone(),
            uid: r.uid,
            to: r.to.clone(),
            challenge: r.auth.map(<[u8]>::to_vec),
            version: r.version,
            stamp: None,
        }),
        _ => Err(HandshakeError::Unexpected("expected a handshake request")),
    })
    .await
}

/// The acceptor's side of the exchange for an accepted request: its
/// challenge and proof for the response, and what the initiator's proof
/// must be.
pub(crate) struct AcceptorAuth {
    /// Sent in the response: this side's challenge, then its proof.
    pub(crate) response: Vec<u8>,
    /// What the initiator's proof must sign.
    initiator_signs: Vec<u8>,
}

impl AcceptorAuth {
    /// The exchange for request `r` to this node (`local`, `local_uid`).
    pub(crate) fn new(
        secret: &Secret,
        r: &Request,
        local: &Address,
        local_uid: u64,
    ) -> Result<Self, HandshakeError> {
        let theirs: Nonce = r
            .challenge
            .as_deref()
            .and_then(|c| c.try_into().ok())
            .ok_or(HandshakeError::Unauthenticated("no valid challenge"))?;
        let ours = auth::nonce()?;
        let transcript = Transcript {
            initiator: &r.from,
            initiator_uid: r.uid,
            initiator_nonce: &theirs,
            acceptor: local,
            acceptor_uid: local_uid,
            acceptor_nonce: &ours,
            lane: r.lane,
        };
        let mut response = ours.to_vec();
        response.extend_from_slice(&secret.prove(Role::Acceptor, &transcript));
        Ok(AcceptorAuth {
            response,
            initiator_signs: transcript.bytes(Role::Initiator),
        })
    }

    /// Reads the initiator's proof, the first frame after the response;
    /// anything else, or a wrong proof, fails.
    pub(crate) async fn read_proof<S: AsyncRead + Unpin>(
        &self,
        secret: &Secret,
        stream: &mut S,
        buf: &mut BytesMut,
    ) -> Result<(), HandshakeError> {
        let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
        let mac = read_one(stream, buf, &decoder, |pdu| match pdu {
            Pdu::AuthProof(p) => Ok(p.mac),
            _ => Err(HandshakeError::Unauthenticated(
                "the first frame after the handshake is not the proof of the shared secret",
            )),
        })
        .await?;
        if secret.verify_signed(&self.initiator_signs, &mac) {
            Ok(())
        } else {
            Err(HandshakeError::Unauthenticated(
                "the peer's proof of the shared secret is wrong",
            ))
        }
    }
}

/// Accepts a handshake request, listing in the response's `reason` the
/// features this node decodes (wire-protocol.md §5.2a); `local` and
/// `auth` as for [`respond`].
pub(crate) async fn accept<S: AsyncWrite + Unpin>(
    stream: &mut S,
    local: &Local<'_>,
    auth: Option<&[u8]>,
) -> std::io::Result<()> {
    let features = Features::SUPPORTED.list();
    respond(stream, HandshakeStatus::Accepted, local, features, auth).await
}

/// Answers a handshake request; `auth` is the acceptor's challenge and
/// proof, when the exchange is on. With `local.stamp` (the request was
/// stamped) the response is of the stamped version, and an accepted one
/// is followed by this node's stamp.
pub(crate) async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: HandshakeStatus,
    local: &Local<'_>,
    reason: &str,
    auth: Option<&[u8]>,
) -> std::io::Result<()> {
    let mut out = BytesMut::with_capacity(256);
    let response = HandshakeResponse {
        version: local
            .stamp
            .map_or(PROTOCOL_VERSION, |_| HANDSHAKE_VERSION_STAMPED),
        status,
        from: local.address.clone(),
        uid: local.uid,
        auth,
        reason,
    };
    let mut encoded = encode(&Pdu::HandshakeResponse(Box::new(response)), &mut out);
    if let (Some(stamp), HandshakeStatus::Accepted) = (local.stamp, status) {
        encoded = encoded
            .and_then(|()| encode(&Pdu::IncarnationStamp(IncarnationStamp { stamp }), &mut out));
    }
    if encoded.is_ok() {
        stream.write_all(&out).await?;
        stream.flush().await?;
    }
    Ok(())
}
