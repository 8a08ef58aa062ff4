//! The span context that travels with `tell` and `ask`.
//!
//! With `[tracing] message_spans` on, a message told to an actor carries the
//! sender's current `tracing` span, and the `volley.handle` span around its
//! handling is that span's child: one request can be followed from an HTTP
//! handler through every actor it touches. Across nodes the context cannot
//! be a `Span` (an id in the sender's subscriber); it travels as the W3C
//! trace context's fields ([`TraceParent`]), and a [`TracePropagator`],
//! supplied by the application, converts between the two. volley does not
//! depend on OpenTelemetry itself: which version, which exporter and
//! whether to use it at all stay the application's choice
//! (`examples/otel.rs` implements the propagator with
//! `tracing-opentelemetry` in a few lines).
//!
//! Cost: an actor of a system without `message_spans` has the default
//! mailbox, whose tell never looks at tracing (the capture lives in the
//! mailbox's policy, which only ordered, bounded and traced mailboxes
//! have). A traced message's context waits in a slot of its mailbox
//! ([`ParentSlots`]) and its envelope names the slot, so envelopes stay as
//! small as they were and need no drop glue of their own (measured: glue
//! on the envelope cost every actor's stop a deque walk per queue).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::util::sync::SpinMutex;

/// A W3C trace context (`traceparent`, version 00): the trace, the span
/// that is the parent of whatever the receiver starts, and the flags.
///
/// Its text form is the `traceparent` header,
/// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`; on volley's wire
/// it is the same fields in binary (docs/wire-protocol.md §5.5a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The trace id; all zeros is invalid.
    pub trace_id: [u8; 16],
    /// The id of the sending span; all zeros is invalid.
    pub parent_id: [u8; 8],
    /// Trace flags; bit 0 is "sampled".
    pub flags: u8,
}

impl TraceParent {
    /// Whether the ids are usable: W3C forbids all-zero trace and parent
    /// ids, and a receiver must ignore such a context.
    pub fn is_valid(&self) -> bool {
        self.trace_id != [0; 16] && self.parent_id != [0; 8]
    }

    /// Whether the sender sampled the trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        for b in self.trace_id {
            write!(f, "{b:02x}")?;
        }
        f.write_str("-")?;
        for b in self.parent_id {
            write!(f, "{b:02x}")?;
        }
        write!(f, "-{:02x}", self.flags)
    }
}

/// A `traceparent` header that is not version 00's form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid traceparent {header:?}: {reason}")]
pub struct TraceParentError {
    /// What was parsed.
    pub header: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for TraceParent {
    type Err = TraceParentError;

    /// Parses the `traceparent` header of version 00 (lower-case hex, as
    /// the W3C recommendation requires); all-zero ids are refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |reason| TraceParentError {
            header: s.to_owned(),
            reason,
        };
        let parts: Vec<&str> = s.split('-').collect();
        let [version, trace, parent, flags] = parts[..] else {
            return Err(fail("expected four fields separated by '-'"));
        };
        if version != "00" {
            return Err(fail("only version 00 is understood"));
        }
        let mut tp = TraceParent {
            trace_id: [0; 16],
            parent_id: [0; 8],
            flags: 0,
        };
        hex_into(trace, &mut tp.trace_id)
            .ok_or_else(|| fail("trace id is not 32 lower-case hex digits"))?;
        hex_into(parent, &mut tp.parent_id)
            .ok_or_else(|| fail("parent id is not 16 lower-case hex digits"))?;
        let mut f = [0u8; 1];
        hex_into(flags, &mut f).ok_or_else(|| fail("flags are not 2 lower-case hex digits"))?;
        tp.flags = f[0];
        if !tp.is_valid() {
            return Err(fail("an all-zero trace or parent id is invalid"));
        }
        Ok(tp)
    }
}

fn hex_into(text: &str, out: &mut [u8]) -> Option<()> {
    if text.len() != out.len() * 2 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(())
}

/// Converts between `tracing` spans and [`TraceParent`]s, for the context
/// that crosses nodes. The application implements it with whatever gives
/// its spans W3C ids (usually `tracing-opentelemetry`) and installs it in
/// [`TracingSettings::propagator`](crate::TracingSettings::propagator).
pub trait TracePropagator: Send + Sync + 'static {
    /// The context to send for `span` (the sender's current span), or
    /// `None` if it has none worth sending.
    fn inject(&self, span: &tracing::Span) -> Option<TraceParent>;

    /// Makes `parent`, which came from another node, the parent of `span`,
    /// a `volley.handle` span just created for a message it came with.
    fn attach(&self, span: &tracing::Span, parent: &TraceParent);
}

/// A [`TracePropagator`] as settings hold it: cloned with the settings,
/// equal only to itself.
#[derive(Clone)]
pub struct Propagation(pub Arc<dyn TracePropagator>);

impl Propagation {
    /// Wraps `propagator`.
    pub fn new(propagator: impl TracePropagator) -> Self {
        Propagation(Arc::new(propagator))
    }
}

impl fmt::Debug for Propagation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Propagation(..)")
    }
}

impl PartialEq for Propagation {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Propagation {}

/// Where a traced message's handler span gets its parent.
pub(crate) enum Parent {
    /// The sender's span, in this process.
    Local(tracing::Span),
    /// The sender's context, from another node.
    Remote(TraceParent),
}

impl Parent {
    /// The sender's current span, or `None` when the sender is in no span
    /// (nothing to carry, so nothing is stored).
    #[inline]
    pub(crate) fn current() -> Option<Parent> {
        let span = tracing::Span::current();
        (!span.is_none()).then_some(Parent::Local(span))
    }
}

/// The span contexts of the messages queued in one traced mailbox, each in
/// a numbered slot that its envelope names. Kept beside the queue rather
/// than in the envelope, so that envelopes need no drop glue: a slot is
/// freed when its message is handled or becomes a dead letter, and what is
/// left goes with the mailbox.
pub(crate) struct ParentSlots {
    /// Held for a push or a pop, like the mailbox's own lock (and a spin
    /// lock for the same reason: the critical sections are a few
    /// instructions).
    slots: SpinMutex<Slots>,
}

#[derive(Default)]
struct Slots {
    taken: Vec<Option<Parent>>,
    free: Vec<u32>,
}

impl Default for ParentSlots {
    fn default() -> Self {
        ParentSlots {
            slots: SpinMutex::new(Slots::default()),
        }
    }
}

impl ParentSlots {
    /// Stores `parent`; returns its slot.
    pub(crate) fn put(&self, parent: Parent) -> u32 {
        let mut s = self.slots.lock();
        match s.free.pop() {
            Some(at) => {
                s.taken[at as usize] = Some(parent);
                at
            }
            None => {
                s.taken.push(Some(parent));
                // A mailbox never holds 2^32 messages at once.
                (s.taken.len() - 1) as u32
            }
        }
    }

    /// Takes the parent out of slot `at`, freeing the slot.
    pub(crate) fn take(&self, at: u32) -> Option<Parent> {
        let mut s = self.slots.lock();
        let parent = s.taken.get_mut(at as usize)?.take()?;
        s.free.push(at);
        Some(parent)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        let s = self.slots.lock();
        s.taken.len() - s.free.len()
    }
}

/// The `volley.handle` span for a message to the actor at `actor`,
/// child of `parent` when there is one.
pub(crate) fn handler_span(
    actor: &impl std::fmt::Display,
    message: &'static str,
    parent: Option<&Parent>,
    propagation: Option<&Propagation>,
) -> tracing::Span {
    match parent {
        None => tracing::info_span!("volley.handle", actor = %actor, message),
        Some(Parent::Local(from)) => {
            tracing::info_span!(parent: from, "volley.handle", actor = %actor, message)
        }
        Some(Parent::Remote(context)) => {
            // Not nested under whatever is current on this thread: the
            // remote context is the one parent.
            let span = tracing::info_span!(parent: None, "volley.handle", actor = %actor, message);
            if let Some(p) = propagation {
                p.0.attach(&span, context);
            }
            span
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_header_round_trips() {
        let tp: TraceParent = HEADER.parse().unwrap();
        assert_eq!(tp.trace_id[0], 0x4b);
        assert_eq!(tp.parent_id[7], 0xb7);
        assert!(tp.sampled());
        assert_eq!(tp.to_string(), HEADER);
    }

    #[test]
    fn bad_headers_say_what_is_wrong() {
        let reason = |s: &str| s.parse::<TraceParent>().unwrap_err().reason;
        assert_eq!(reason("00-abc"), "expected four fields separated by '-'");
        assert_eq!(
            reason("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            "only version 00 is understood"
        );
        assert_eq!(
            reason("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
            "trace id is not 32 lower-case hex digits"
        );
        assert_eq!(
            reason("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01"),
            "parent id is not 16 lower-case hex digits"
        );
        assert_eq!(
            reason("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"),
            "flags are not 2 lower-case hex digits"
        );
        assert_eq!(
            reason("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
            "an all-zero trace or parent id is invalid"
        );
    }

    #[test]
    fn outside_any_span_nothing_is_captured() {
        assert!(Parent::current().is_none());
    }

    #[test]
    fn slots_are_reused_and_taken_once() {
        let slots = ParentSlots::default();
        let context: TraceParent = HEADER.parse().unwrap();
        let a = slots.put(Parent::Remote(context));
        let b = slots.put(Parent::Remote(context));
        assert_ne!(a, b);
        assert!(matches!(slots.take(a), Some(Parent::Remote(c)) if c == context));
        assert!(slots.take(a).is_none(), "a slot is taken once");
        assert!(slots.take(99).is_none(), "an unknown slot is nothing");
        assert_eq!(
            slots.put(Parent::Remote(context)),
            a,
            "the freed slot is reused"
        );
        assert_eq!(slots.len(), 2);
    }
}
