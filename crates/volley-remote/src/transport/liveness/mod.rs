//! Whether a remote node is still there, and which incarnation of it.
//!
//! `heartbeat` sends, `rtt` times the answers, `failure_detector` is the
//! phi accrual detector and `reachability` keeps one per node and reports
//! the unreachable. `incarnations` decides which incarnation of a node
//! this one talks to, and what ends when one is gone.

pub(crate) mod failure_detector;
pub(crate) mod heartbeat;
pub(crate) mod incarnations;
pub(crate) mod reachability;
pub(crate) mod rtt;
