//! What the runtime tells the outside about itself: [`metrics`] through the
//! `metrics` facade, the `volley.handle` span per message
//! ([`message_spans`]), and the span context a message carries across
//! actors and nodes ([`trace_context`]).
//!
//! Each is off or cheap by default and is switched on by its section of the
//! settings. `trace_context` is low-level (the mailbox stores it);
//! `metrics` reads the system's counters.

pub(crate) mod message_spans;
pub(crate) mod metrics;
pub(crate) mod trace_context;
