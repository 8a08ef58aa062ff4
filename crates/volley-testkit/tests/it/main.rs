//! volley-testkit's tests, in one binary: the probe, manual time, the
//! supervisor probe and the per-dispatcher test attribute.

mod dispatcher;
mod manual_time;
mod probe;
mod probe_more;
mod supervision;
