//! Remote death watch: `Terminated` across nodes, its order, and node-level
//! death watch.

mod death_notice_order;
mod node_death_watch;
mod remote_watch;
mod remote_watch_more;
mod termination;
