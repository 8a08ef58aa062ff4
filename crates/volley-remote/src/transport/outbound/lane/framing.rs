//! How a user message is framed on its way into a lane: plain or with the
//! sender's trace context. A type parameter of the send path, so that the
//! plain send compiles as if tracing did not exist.

use bytes::BytesMut;

use crate::serialization::SerializeError;
use crate::wire::{EncodeError, Encoder, MessageHeader};

/// How a user message is framed: plain (UserMessage) or with the sender's
/// trace context (TracedUserMessage). A type parameter rather than an
/// `Option`, so the plain send is compiled exactly as if tracing did not
/// exist (measured: an `Option` cost every remote send about 50
/// instructions through lost inlining).
pub(crate) trait Framing: Copy {
    /// Whether the frame may become a Request that carries its first local
    /// reply handle inline (`Encoder::into_request`). Only plain messages
    /// can: a Request has no trace context.
    const INLINE_REPLY_HANDLE: bool;

    /// Appends the frame for `header` whose payload `write` serializes.
    fn frame<F>(
        self,
        encoder: &Encoder,
        buf: &mut BytesMut,
        header: &MessageHeader,
        write: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>;
}

/// A UserMessage frame.
#[derive(Clone, Copy)]
pub(crate) struct Plain;

impl Framing for Plain {
    const INLINE_REPLY_HANDLE: bool = true;

    #[inline(always)]
    fn frame<F>(
        self,
        encoder: &Encoder,
        buf: &mut BytesMut,
        header: &MessageHeader,
        write: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>,
    {
        encoder.user_message_with(buf, header, write)
    }
}

/// A TracedUserMessage frame carrying this context.
#[derive(Clone, Copy)]
pub(crate) struct WithContext<'a>(pub(crate) &'a volley::TraceParent);

impl Framing for WithContext<'_> {
    const INLINE_REPLY_HANDLE: bool = false;

    fn frame<F>(
        self,
        encoder: &Encoder,
        buf: &mut BytesMut,
        header: &MessageHeader,
        write: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>,
    {
        encoder.traced_user_message_with(buf, header, self.0, write)
    }
}
