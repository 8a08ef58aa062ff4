//! Telling a peer that broke the protocol why its connection closes: a
//! Disassociate with reason "protocol error" and the decoder's complaint,
//! written before the close (wire-protocol §8), so the other side's log
//! says what was wrong instead of only that the connection went away.
//!
//! A wrong preamble gets nothing: whatever sent it does not speak volley
//! (an HTTP client, a port scanner), and the connection is closed at its
//! first wrong byte.

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::wire::{DecodeError, Disassociate, DisassociateReason, Encoder, Lane, Pdu};

/// The most time spent telling: a peer that does not read must not hold
/// the connection open.
const TELL_WITHIN: Duration = Duration::from_millis(100);

/// Whether a peer whose bytes failed with `error` is told so: every codec
/// error past the preamble.
pub(in crate::transport) fn deserves_telling(error: &DecodeError) -> bool {
    !matches!(
        error,
        DecodeError::BadMagic { .. }
            | DecodeError::UnsupportedVersion { .. }
            | DecodeError::UnknownLane(_)
    )
}

/// Writes a Disassociate(protocol error) naming `error` to `stream`,
/// best effort, within [`TELL_WITHIN`].
pub(in crate::transport) async fn tell(
    stream: &mut (impl AsyncWrite + Unpin),
    error: &DecodeError,
) {
    let text = error.to_string();
    let goodbye = Pdu::Disassociate(Disassociate {
        reason: DisassociateReason::ProtocolError,
        text: &text,
    });
    let mut out = BytesMut::new();
    if Encoder::for_lane(Lane::Control)
        .encode(&goodbye, &mut out)
        .is_err()
    {
        return;
    }
    let written = async {
        stream.write_all(&out).await?;
        stream.flush().await
    };
    let _ = tokio::time::timeout(TELL_WITHIN, written).await;
}
