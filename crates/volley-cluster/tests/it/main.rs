//! volley-cluster's integration tests: the membership core driven by the
//! seeded simulator (design §6.1). Each test runs its fixed seeds; a
//! failure names its seed, and `VOLLEY_CLUSTER_SEED=<seed>` replays it.
//! `network` runs `Cluster` on real nodes over loopback instead, and
//! `processes` runs each node in an OS process of its own, behind a TCP
//! relay (this binary started again as the node).

mod churn;
mod common;
mod convergence;
mod downing;
mod formation;
mod membership;
mod network;
mod partition;
mod processes;
mod reachability;
mod replay;
mod services;
mod sharding;
mod weakly_up;

use volley_testkit::log_capture;
