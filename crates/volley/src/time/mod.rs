//! Time: the clock behind volley's timers, and everything that waits on it.
//!
//! [`ManualClock`] is the public part: a clock that only a test moves (see
//! [`Settings::manual_clock`](crate::Settings::manual_clock)). Inside the
//! crate, `clock` is the seam every delay is armed through (tokio's timer or
//! the manual clock); `timers` are an actor's keyed timers,
//! `receive_timeout` its idle signal, and `scheduler` the system's
//! scheduler for work from outside an actor. They share that seam, so a
//! system on a manual clock runs all of them on it.

pub(crate) mod clock;
pub(crate) mod receive_timeout;
pub(crate) mod scheduler;
pub(crate) mod timers;

pub use clock::ManualClock;
