//! `[tracing] message_spans`: each handled user message runs inside a
//! `tracing` span named `volley.handle`, with the actor's path and the
//! message type as fields, so a subscriber (a log formatter, an
//! OpenTelemetry exporter) can see where the time goes per message.
//!
//! Off by default. The activation loop is compiled with and without the
//! span (as it is with and without a receive timeout), so actors of a
//! system without it run no span code; the choice is one branch per
//! activation, on a flag copied into the actor's state when it is created.
//!
//! With it on, a message also carries the span it was told in, which
//! becomes the parent of its `volley.handle` span (`trace_context`).

use serde::{Deserialize, Serialize};

/// `[tracing]`: tracing the runtime does for the application.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TracingSettings {
    /// Runs each handled user message (timers' included) inside an
    /// info-level span `volley.handle` with fields `actor` (the path) and
    /// `message` (the Rust type), child of the span the message was told
    /// or asked in (if any). Default false.
    pub message_spans: bool,
    /// Carries span context to and from other nodes (a W3C trace context
    /// in the user-message frame): on the sending node it turns the
    /// sender's span into a [`TraceParent`](crate::TraceParent), on the
    /// receiving node (which needs `message_spans` too) it makes that the
    /// parent of the handler span. Not read from or written to TOML; set
    /// in code. Default `None`: nothing crosses the wire.
    #[serde(skip)]
    pub propagator: Option<crate::observability::trace_context::Propagation>,
}

/// The span's name.
pub const MESSAGE_SPAN: &str = "volley.handle";
