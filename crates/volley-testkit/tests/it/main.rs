//! volley-testkit's tests, in one binary: the probe, manual time, the
//! supervisor probe, the per-dispatcher test attribute, closure actors,
//! async waits, the multi-node fixture and the TCP relay.

mod actor_fn;
mod dispatcher;
mod manual_time;
mod probe;
mod probe_more;
mod relay;
mod remote;
mod socket;
mod supervision;
mod wait;
