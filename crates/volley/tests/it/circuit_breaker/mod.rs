//! The circuit breaker: its states, concurrent calls, and what volley adds.

mod concurrent;
mod extras;
mod states;
