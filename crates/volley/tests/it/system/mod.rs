//! The actor system: its lifecycle, coordinated shutdown, draining, hooks,
//! and the event stream.

mod coordinated_shutdown;
mod coordinated_shutdown_more;
mod drain;
mod event_stream;
mod extensions;
mod hooks;
mod lifecycle;
