//! Connection set-up: preamble and handshake, both directions.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::wire::{
    Address, DecodeError, Decoder, DecoderConfig, Encoder, HandshakeRequest, HandshakeResponse,
    HandshakeStatus, Lane, Pdu, Preamble, PREAMBLE_LEN, PROTOCOL_VERSION,
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
}

/// The initiator's view of an accepted handshake.
pub(crate) struct Accepted {
    pub(crate) peer_uid: u64,
}

/// The acceptor's view of a request.
pub(crate) struct Request {
    pub(crate) lane: Lane,
    pub(crate) from: Address,
    pub(crate) uid: u64,
    pub(crate) to: Address,
    pub(crate) auth_token: Option<Vec<u8>>,
    pub(crate) version: u8,
}

/// Reads until one whole frame is buffered and hands it to `f`.
async fn read_one<T>(
    stream: &mut TcpStream,
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

/// Connects as the initiator of one lane.
pub(crate) async fn connect(
    remote: &Address,
    lane: Lane,
    local: &Address,
    local_uid: u64,
    auth_token: Option<&[u8]>,
) -> Result<(TcpStream, Accepted), HandshakeError> {
    let mut stream = TcpStream::connect((remote.host(), remote.port())).await?;
    stream.set_nodelay(true)?;
    let mut out = BytesMut::with_capacity(256);
    Preamble::new(lane).encode(&mut out);
    let request = HandshakeRequest {
        version: PROTOCOL_VERSION,
        from: local.clone(),
        uid: local_uid,
        to: remote.clone(),
        auth_token,
    };
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeRequest(Box::new(request)), &mut out)
        .map_err(|_| HandshakeError::Unexpected("cannot encode the handshake"))?;
    stream.write_all(&out).await?;
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let mut buf = BytesMut::with_capacity(1024);
    read_one(&mut stream, &mut buf, &decoder, |pdu| match pdu {
        Pdu::HandshakeResponse(r) if r.status == HandshakeStatus::Accepted => {
            Ok(Accepted { peer_uid: r.uid })
        }
        Pdu::HandshakeResponse(r) => Err(HandshakeError::Refused {
            status: r.status,
            reason: r.reason.to_string(),
        }),
        _ => Err(HandshakeError::Unexpected("expected a handshake response")),
    })
    .await
    .map(|a| (stream, a))
}

/// Reads the preamble and the handshake request of an inbound connection.
/// Leaves whatever followed them in `buf`.
pub(crate) async fn read_request(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
) -> Result<Request, HandshakeError> {
    while buf.len() < PREAMBLE_LEN {
        if stream.read_buf(buf).await? == 0 {
            return Err(HandshakeError::Closed);
        }
    }
    let preamble = Preamble::decode(&buf[..PREAMBLE_LEN])?
        .ok_or(HandshakeError::Unexpected("short preamble"))?;
    buf.advance(PREAMBLE_LEN);
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    read_one(stream, buf, &decoder, |pdu| match pdu {
        Pdu::HandshakeRequest(r) => Ok(Request {
            lane: preamble.lane,
            from: r.from.clone(),
            uid: r.uid,
            to: r.to.clone(),
            auth_token: r.auth_token.map(<[u8]>::to_vec),
            version: r.version,
        }),
        _ => Err(HandshakeError::Unexpected("expected a handshake request")),
    })
    .await
}

/// Answers a handshake request.
pub(crate) async fn respond(
    stream: &mut TcpStream,
    status: HandshakeStatus,
    local: &Address,
    local_uid: u64,
    reason: &str,
) -> std::io::Result<()> {
    let mut out = BytesMut::with_capacity(256);
    let response = HandshakeResponse {
        version: PROTOCOL_VERSION,
        status,
        from: local.clone(),
        uid: local_uid,
        auth_token: None,
        reason,
    };
    if Encoder::for_lane(Lane::Control)
        .encode(&Pdu::HandshakeResponse(Box::new(response)), &mut out)
        .is_ok()
    {
        stream.write_all(&out).await?;
    }
    Ok(())
}
