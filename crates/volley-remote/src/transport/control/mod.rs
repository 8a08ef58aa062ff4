//! What travels between nodes besides user messages: system messages,
//! watches, remote spawns, and the replies asks wait for.
//!
//! `system_messages` numbers and resends watch, unwatch, stop and death
//! notices so each arrives once and in order; `remote_watch` keeps who
//! watches whom across nodes; `flush` empties the user lanes before a
//! death notice; `remote_spawn` and `reply_handles` are the spawn and ask
//! protocols' waiting sides.

pub(crate) mod flush;
pub(crate) mod remote_spawn;
pub(crate) mod remote_watch;
pub(crate) mod reply_handles;
pub(crate) mod system_messages;
