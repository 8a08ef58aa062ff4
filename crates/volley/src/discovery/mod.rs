//! Finding actors by what they serve rather than by path: the
//! [`receptionist`] (typed service keys and their listings) and the
//! [`topic`] (publish and subscribe, whose instances find each other through
//! the receptionist).
//!
//! Both are ordinary actors under `/system` built on the public actor API;
//! nothing below them imports from here (routing's keyed groups follow a
//! receptionist listing, the system spawns the receptionist on first use).

pub(crate) mod observer;
pub(crate) mod receptionist;
pub(crate) mod topic;
