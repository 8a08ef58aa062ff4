//! What a listener of a gateway (gRPC, web) may be made to hold: a cap on
//! open connections, in all and per source IP, a deadline for a new
//! connection's first bytes, and one for writes a client does not take
//! (`WriteStall`). The remote transport has its own, richer
//! guard (`[remote.limits]`), which also knows peers by incarnation.

pub mod gate;
pub mod gated_stream;
pub mod listener;
pub mod write_stall;

pub use gate::{Admission, ConnectionGate, ConnectionLimits, Refusal, RefusedCounts};
pub use gated_stream::GatedStream;
pub use listener::GatedListener;
pub use write_stall::WriteStall;
