//! The cluster's phases of coordinated shutdown (design §3.6), and the
//! shutdown of a node that sees itself downed.
//!
//! - `cluster-leave`: a member not yet leaving becomes Leaving (the same
//!   request as `Cluster::leave`); the phase waits until the leader moves
//!   it to Exiting;
//! - `cluster-exiting`: a leaving member waits until it sees itself
//!   Removed;
//! - `cluster-shutdown`: the node leaves the SWIM group and the driver
//!   stops.
//!
//! Each wait ends early when there is nothing to wait for (the node never
//! joined, was downed, its driver stopped, or its remoting is shut down),
//! and at the phase timeout (`shutdown_phase_timeout`) otherwise.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use volley::{ActorSystem, ShutdownReason};
use volley_remote::Remoting;

use crate::member::MemberStatus;
use crate::runtime::driver::Command;
use crate::runtime::error::ClusterError;
use crate::runtime::shared::{SelfView, Shared};

/// What the phase tasks need.
#[derive(Clone)]
struct Phases {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    remoting: Remoting,
}

/// Adds the cluster's tasks to the system's coordinated shutdown.
pub(crate) fn add_cluster_phases(
    system: &ActorSystem,
    remoting: &Remoting,
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
) -> Result<(), ClusterError> {
    let phases = Phases {
        commands,
        shared,
        remoting: remoting.clone(),
    };
    let shutdown = system.coordinated_shutdown();
    let (leave, exiting, stop) = (phases.clone(), phases.clone(), phases);
    shutdown
        .add_task("cluster-leave", "cluster-leave", move || leave.leave())
        .and_then(|()| {
            shutdown.add_task("cluster-exiting", "cluster-exiting", move || {
                exiting.exiting()
            })
        })
        .and_then(|()| {
            shutdown.add_task("cluster-shutdown", "cluster-shutdown", move || stop.stop())
        })
        .map_err(|_| ClusterError::SystemTerminated)
}

impl Phases {
    /// Whether anyone could still answer this node's leave.
    fn can_leave(&self, view: &SelfView) -> bool {
        !view.stopped && !self.remoting.is_shut_down()
    }

    async fn leave(self) {
        let mut view = self.shared.self_view();
        let now = view.borrow().clone();
        match now.status {
            Some(status) if status < MemberStatus::Leaving && self.can_leave(&now) => {
                let _stopped = self.commands.send(Command::Leave);
            }
            Some(MemberStatus::Leaving) if self.can_leave(&now) => {}
            _ => return,
        }
        wait_for(&mut view, |v| {
            v.stopped || v.status.is_none_or(|s| s >= MemberStatus::Exiting)
        })
        .await;
    }

    async fn exiting(self) {
        let mut view = self.shared.self_view();
        let now = view.borrow().clone();
        let leaving = matches!(
            now.status,
            Some(MemberStatus::Leaving | MemberStatus::Exiting)
        );
        if leaving && self.can_leave(&now) {
            wait_for(&mut view, |v| {
                v.stopped || v.status.is_none_or(|s| s >= MemberStatus::Down)
            })
            .await;
        }
    }

    async fn stop(self) {
        let mut view = self.shared.self_view();
        if self.commands.send(Command::Shutdown).is_ok() {
            wait_for(&mut view, |v| v.stopped).await;
        }
    }
}

async fn wait_for(view: &mut watch::Receiver<SelfView>, done: impl FnMut(&SelfView) -> bool) {
    // An error means the sender is gone with `Shared`: nothing to wait for.
    let _gone = view.wait_for(done).await;
}

/// Runs the system's coordinated shutdown because this node was downed
/// (Akka's `run-coordinated-shutdown-when-down`), without waiting for it.
pub(crate) fn shut_down_downed(system: &ActorSystem) {
    let system = system.clone();
    let handle = system.runtime_handle().clone();
    handle.spawn(async move {
        system
            .coordinated_shutdown()
            .run(ShutdownReason::ClusterDowning)
            .await;
    });
}
