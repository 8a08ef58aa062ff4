//! What travels between nodes besides user messages: system messages,
//! watches, remote spawns, and the replies asks wait for.
//!
//! `system_messages` numbers and resends watch, unwatch, stop and death
//! notices so each arrives once and in order; `remote_watch` keeps who
//! watches whom across nodes; `flush` empties the user lanes before a
//! death notice; `remote_spawn` and `reply_handles` are the spawn and ask
//! protocols' waiting sides.

pub(crate) mod flush;
pub(crate) mod remote_spawn;
pub(crate) mod remote_watch;
pub(crate) mod reply_handles;
pub(crate) mod system_messages;

use std::sync::Arc;

use volley::remote::{RemoteRef, RemoteSendError};
use volley::ActorPath;

use crate::transport::control::flush::Flushes;
use crate::transport::control::remote_spawn::SpawnRequests;
use crate::transport::control::remote_watch::{DeadActors, RemoteWatches};
use crate::transport::liveness::LivenessContext;
use crate::transport::outbound::association::Association;
use crate::wire::Address;

/// What the control protocols need of the rest of the transport, on top
/// of liveness: their own state, which the node keeps, and refs.
pub(crate) trait ControlContext: LivenessContext + Sized {
    /// Flushes of user lanes that death notices wait for.
    fn flushes(&self) -> &Flushes;
    /// Remote spawns waiting for their answers.
    fn spawns(&self) -> &SpawnRequests;
    /// Who watches whom across nodes.
    fn remote_watches(&self) -> &RemoteWatches;
    /// Remote actors known to have terminated.
    fn dead_actors(&self) -> &DeadActors;
    /// The association to `remote`, started by this node's own word.
    fn association(&self, remote: &Address) -> Result<Arc<Association>, RemoteSendError>;
    /// A ref to the remote actor at `path`.
    fn remote_ref(
        self: &Arc<Self>,
        path: ActorPath,
        uid: u64,
        association: Option<Arc<Association>>,
    ) -> Arc<RemoteRef>;
}
