//! Mailboxes: priority and bounded mailboxes, throughput batching, and the
//! stash.

mod bounded;
mod bounded_stash;
mod mailboxes;
mod priority;
mod stash;
mod stash_more;
