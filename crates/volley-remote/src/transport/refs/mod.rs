//! `ActorRef`s inside messages on the wire: the per-connection tables
//! that give each ref a small id, and the storage of the imported ones.

pub(crate) mod id_slots;
pub(crate) mod limit_error;
pub(crate) mod tables;
