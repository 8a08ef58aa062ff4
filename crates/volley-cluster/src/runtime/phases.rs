//! The cluster's phases of coordinated shutdown (design §3.6), and the
//! shutdown of a node that sees itself downed.
//!
//! - `cluster-leave`: a member not yet leaving becomes Leaving; the
//!   phase waits until the leader moves it to Exiting;
//! - `cluster-exiting`: the cluster adds nothing here; the singletons
//!   hand over in it (their managers' tasks);
//! - `cluster-exiting-done`: an Exiting member confirms its exit (Akka's
//!   `ExitingCompleted`, which sends `ExitingConfirmed`), so the leader
//!   may remove it, and waits until it sees itself Removed;
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
            shutdown.add_task("cluster-exiting-done", "exiting-completed", move || {
                exiting.exiting_done()
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

    /// The exiting tasks (shard hand-off, singleton hand-over) ran in
    /// the phases before: confirm, then wait for the removal.
    async fn exiting_done(self) {
        let mut view = self.shared.self_view();
        let now = view.borrow().clone();
        if now.status == Some(MemberStatus::Exiting) && self.can_leave(&now) {
            let _stopped = self.commands.send(Command::ConfirmExiting);
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

/// Runs the system's coordinated shutdown because this node leaves
/// (Akka's `ClusterLeavingReason`), without waiting for it.
pub(crate) fn shut_down_leaving(system: &ActorSystem) {
    run_shutdown(system, ShutdownReason::ClusterLeaving);
}

/// Runs the system's coordinated shutdown because this node was downed
/// (Akka's `run-coordinated-shutdown-when-down`), without waiting for it.
pub(crate) fn shut_down_downed(system: &ActorSystem) {
    run_shutdown(system, ShutdownReason::ClusterDowning);
}

/// Runs the system's coordinated shutdown because this node did not join
/// through its seed nodes in time (Akka's
/// `shutdown-after-unsuccessful-join-seed-nodes`), without waiting for it.
pub(crate) fn shut_down_join_unsuccessful(system: &ActorSystem) {
    run_shutdown(system, ShutdownReason::ClusterJoinUnsuccessful);
}

fn run_shutdown(system: &ActorSystem, reason: ShutdownReason) {
    let system = system.clone();
    let handle = system.runtime_handle().clone();
    handle.spawn(async move { system.coordinated_shutdown().run(reason).await });
}
