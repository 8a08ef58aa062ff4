//! The node's slot for its cluster hook, and the counts of cluster
//! frames.

use std::sync::{Arc, OnceLock};

use crate::transport::cluster::counts::ClusterCounts;
use crate::transport::cluster::hook::{ClusterHookError, ClusterInbound};

/// The hook, set at most once, and what became of cluster frames.
#[derive(Default)]
pub(crate) struct ClusterPort {
    hook: OnceLock<Arc<dyn ClusterInbound>>,
    pub(crate) counts: ClusterCounts,
}

impl ClusterPort {
    /// The installed hook, if any.
    pub(crate) fn hook(&self) -> Option<&Arc<dyn ClusterInbound>> {
        self.hook.get()
    }

    /// Installs `hook`, unless one is installed already.
    pub(crate) fn install(&self, hook: Arc<dyn ClusterInbound>) -> Result<(), ClusterHookError> {
        self.hook
            .set(hook)
            .map_err(|_| ClusterHookError::AlreadyInstalled {
                installed: self
                    .hook
                    .get()
                    .map(|h| h.cluster_name().to_string())
                    .unwrap_or_default(),
            })
    }
}
