//! Liveness: heartbeats, round trips, and failure detection.

mod failure_detector;
mod heartbeat_rtt;
