//! Declarations of refs on a lane: the export ids that precede the frames
//! using them, and the encoding of a message inside its connection's
//! export table scope.

use std::cell::RefCell;

use bytes::BytesMut;
use volley::remote::{RemoteRef, RemoteSendError};
use volley::AnyRef;

use super::LaneRefusal;
use crate::transport::outbound::association::AssociationId;
use crate::transport::outbound::route::{CacheTag, RecipientCache};
use crate::transport::outbound::OutboundContext;
use crate::transport::refs::tables::is_local_reply_handle;
use crate::transport::refs::tables::{ExportTable, TEMPORARY_IDS};
use crate::wire::{EncodeError, Encoder, Pdu, RefDeclaration, RefId, ReplyHandleDeclaration};

/// The recipient's export id on this connection, exported now if it is new
/// (its declaration is then pending); cached in the route unless
/// temporary. Out of line: the cached id in the route answers nearly every
/// send.
#[cold]
#[inline(never)]
pub(super) fn recipient_id(
    exports: &RefCell<ExportTable>,
    target: &RemoteRef,
    recipient_cache: &RecipientCache,
    generation: CacheTag,
) -> Result<u32, RemoteSendError> {
    let mut table = exports.borrow_mut();
    let id = match table.find(target.uid(), target.path()) {
        Some(id) => id,
        None => {
            let any = target.any().ok_or_else(|| {
                RemoteSendError::Unavailable("the remote ref is being dropped".into())
            })?;
            table.export(&any)
        }
    };
    // A temporary id is recycled: never cache it.
    if id > TEMPORARY_IDS {
        recipient_cache.set(generation, id);
    }
    Ok(id)
}

/// Encodes one message frame with `encode`, which names the refs in the
/// payload by `exports` (the serde path sets the table's scope around the
/// serializer itself, `registry.rs`), and puts the declarations of refs
/// seen for the first time before it. With `inline_reply_handle`, the
/// frame (a UserMessage) becomes a Request if its payload holds a reply
/// handle of this node: the first such handle is named by its correlation
/// id in the frame instead of being declared (wire-protocol.md §5.5b).
/// The plain send does the same without a closure ([`begin_message`],
/// [`end_message`]).
#[inline]
pub(super) fn encode_with_refs(
    core: &(impl OutboundContext + ?Sized),
    encoder: &Encoder,
    association: Option<AssociationId>,
    exports: &mut RefCell<ExportTable>,
    buf: &mut BytesMut,
    inline_reply_handle: bool,
    encode: impl FnOnce(&mut BytesMut, &RefCell<ExportTable>) -> Result<(), EncodeError>,
) -> Result<(), LaneRefusal> {
    let msg_start = begin_message(exports, buf, inline_reply_handle);
    let encoded = encode(buf, exports);
    end_message(
        core,
        encoder,
        association,
        exports,
        buf,
        (msg_start, inline_reply_handle),
        encoded,
    )
}

/// Before a message frame is encoded into `buf`: turns the export table's
/// Request slot off if the frame cannot be a Request. Returns where the
/// frame starts, for [`end_message`]. The table is taken `&mut` (the lane
/// holds its lock) so that no borrow flag is checked.
#[inline(always)]
pub(super) fn begin_message(
    exports: &mut RefCell<ExportTable>,
    buf: &BytesMut,
    inline_reply_handle: bool,
) -> usize {
    if !inline_reply_handle {
        exports.get_mut().allow_requests(false);
    }
    buf.len()
}

/// After a message frame (started at `msg_start`, from [`begin_message`])
/// was encoded: makes it a Request, or puts the declarations of refs it
/// named for the first time before it.
#[inline(always)]
pub(super) fn end_message(
    core: &(impl OutboundContext + ?Sized),
    encoder: &Encoder,
    association: Option<AssociationId>,
    exports: &mut RefCell<ExportTable>,
    buf: &mut BytesMut,
    (msg_start, inline_reply_handle): (usize, bool),
    encoded: Result<(), EncodeError>,
) -> Result<(), LaneRefusal> {
    if !inline_reply_handle {
        exports.get_mut().allow_requests(true);
    }
    // The common case: no new ref in the message, one check.
    if !exports.get_mut().has_pending_or_request() {
        return encoded.map_err(refusal);
    }
    finish_with_refs(core, encoder, association, exports, buf, msg_start, encoded)
}

/// The rest of `encode_with_refs` for a message that named a new ref or
/// its ask's reply handle: out of line, so the common send stays small.
#[inline(never)]
fn finish_with_refs(
    core: &(impl OutboundContext + ?Sized),
    encoder: &Encoder,
    association: Option<AssociationId>,
    exports: &RefCell<ExportTable>,
    buf: &mut BytesMut,
    msg_start: usize,
    mut encoded: Result<(), EncodeError>,
) -> Result<(), LaneRefusal> {
    if let Some(handle) = exports.borrow_mut().take_request() {
        if encoded.is_ok() {
            let correlation = core.register_reply_handle(&handle, association);
            encoded = encoder.into_request(buf, msg_start, correlation);
        }
    }
    if encoded.is_ok() && exports.borrow().has_pending() {
        // Refs inside the message were declared for the first time: their
        // declarations must precede the message. They are appended and
        // rotated in front of it in place: a split-off tail would share
        // the buffer, and the next append would then copy everything
        // queued on the lane.
        let message_len = buf.len() - msg_start;
        write_declarations(core, encoder, association, exports, buf);
        buf[msg_start..].rotate_left(message_len);
        return Ok(());
    }
    // A message that failed still declared its refs: the ids stay
    // assigned, so the peer must learn them before it sees them again.
    write_declarations(core, encoder, association, exports, buf);
    encoded.map_err(refusal)
}

fn refusal(e: EncodeError) -> LaneRefusal {
    match e {
        EncodeError::FrameTooLong { len, .. } => LaneRefusal::TooBig(len),
        e => RemoteSendError::Serialize(e.to_string()).into(),
    }
}

/// Writes the declarations the export table queued. Called for every
/// message, nearly always with nothing queued: the check is inlined, the
/// work is not.
#[inline]
pub(super) fn write_declarations(
    core: &(impl OutboundContext + ?Sized),
    encoder: &Encoder,
    association: Option<AssociationId>,
    exports: &RefCell<ExportTable>,
    buf: &mut BytesMut,
) {
    if exports.borrow().has_pending() {
        write_pending_declarations(core, encoder, association, exports, buf);
    }
}

#[inline(never)]
fn write_pending_declarations(
    core: &(impl OutboundContext + ?Sized),
    encoder: &Encoder,
    association: Option<AssociationId>,
    exports: &RefCell<ExportTable>,
    buf: &mut BytesMut,
) {
    let mut pending = exports.borrow_mut().take_pending();
    for (id, actor) in pending.drain(..) {
        encode_declaration(core, encoder, association, id, &actor, buf);
    }
    exports.borrow_mut().give_back(pending);
}

/// Declares `actor` as `id`: an ask's reply handle of this node by its
/// correlation id (no path), anything else by path.
pub(super) fn encode_declaration(
    core: &(impl OutboundContext + ?Sized),
    encoder: &Encoder,
    association: Option<AssociationId>,
    id: u32,
    actor: &AnyRef,
    buf: &mut BytesMut,
) {
    let id = RefId::new(id).expect("export ids start at 1");
    if is_local_reply_handle(actor) {
        let correlation = core.register_reply_handle(actor, association);
        let declaration = ReplyHandleDeclaration { id, correlation };
        if let Err(e) = encoder.encode(&Pdu::ReplyHandleDeclaration(declaration), buf) {
            tracing::error!("cannot declare reply handle: {e}");
        }
        return;
    }
    let path = core.export_path(actor);
    let declaration = RefDeclaration {
        id,
        uid: actor.uid(),
        path: &path,
    };
    if let Err(e) = encoder.encode(&Pdu::RefDeclaration(declaration), buf) {
        tracing::error!(%path, "cannot declare ref: {e}");
    }
}
