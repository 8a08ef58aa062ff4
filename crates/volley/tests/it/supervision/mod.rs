//! Supervision: directives, restart limits, hierarchies, backoff, and the
//! message a restart gets.

mod backoff;
mod backoff_on_failure;
mod backoff_supervisor;
mod directives;
mod failing_message;
mod hierarchy;
mod misc;
mod restart_limits;
mod supervisor;
mod supervisor_more;
mod typed;
mod typed_children;
