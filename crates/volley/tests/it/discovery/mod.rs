//! Finding actors: the receptionist and topics.

mod observer;
mod receptionist;
mod topic;
