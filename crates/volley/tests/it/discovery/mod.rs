//! Finding actors: the receptionist and topics.

mod receptionist;
mod topic;
