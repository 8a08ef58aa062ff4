//! Helpers with no knowledge of actors, so that any module may import them
//! and they import nothing else from the crate: lock helpers that ignore
//! poisoning ([`locks`]), the loom-swappable primitives of the lock-free
//! protocols ([`sync`]), a log rate limiter ([`log_limiter`]), process-unique
//! random ids ([`uid`]), the text of a caught panic ([`panic`]) and the
//! reading of durations in settings, with the deprecated keys they replaced
//! ([`duration_keys`]).
//!
//! `LogLimiter` and `random_uid` are also public as `volley::remote::...`,
//! because the transport in volley-remote shares them.

pub(crate) mod duration_keys;
pub(crate) mod locks;
pub(crate) mod log_limiter;
pub(crate) mod panic;
pub(crate) mod sync;
pub(crate) mod uid;
