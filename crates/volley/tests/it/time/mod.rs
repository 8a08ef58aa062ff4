//! Time: keyed timers and their modes, receive timeouts, and the scheduler.

mod keyed_timers;
mod receive_timeout;
mod receive_timeout_more;
mod scheduler;
mod timer_modes;
mod timers_more;
