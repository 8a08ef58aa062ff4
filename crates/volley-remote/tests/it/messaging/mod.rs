//! Remote messaging: tell and ask, runs, back-pressure, send queues,
//! compression, and refs on the wire.

mod ask;
mod backpressure;
mod compression;
mod delivery;
mod direct_codec;
mod export_id_reuse;
mod kept_reply_handles;
mod receptionist;
mod requests;
mod resolve_rebinding;
mod runs;
mod send_queue;
mod status_reply;
mod tell_and_ask;
