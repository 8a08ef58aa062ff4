//! One actor and everything that reaches it: what an actor is
//! ([`definition`]: the `Actor` trait and `Props`), how it is addressed
//! ([`actor_ref`], [`adapter`], [`path`]), where its messages wait
//! ([`mailbox`], [`system_msg`]), what runs it ([`cell`]) and what its
//! handlers see ([`context`], [`children`]).
//!
//! These modules share the cell's invariants (one runner per actor, no lost
//! wake-up, the system queue before the mailbox), so they live together.
//! They build on `util`, `dispatcher`, `time` and the trace context of
//! `observability`. They also reach up: to `system` (the system handle
//! every ref carries, dead letters, the guardians a context spawns under),
//! to `supervision` (which the cell applies to its children), to `ask` (a
//! ref and a context can ask) and to `remote` (a ref may be remote).

pub(crate) mod actor_ref;
pub(crate) mod adapter;
pub(crate) mod cell;
pub(crate) mod children;
pub(crate) mod context;
pub(crate) mod definition;
pub(crate) mod mailbox;
pub(crate) mod mailbox_batch;
pub(crate) mod path;
pub(crate) mod system_msg;
