//! Asking: replies, deadlines, the ask pattern, asks from a handler and from
//! tasks, and `StatusReply`.

mod callback;
mod context_ask;
mod deadlines;
mod from_tasks;
mod pattern;
mod replies;
mod status_reply;
