//! Code to run when this node becomes Up or is removed (Akka's
//! `registerOnMemberUp` and `registerOnMemberRemoved`).
//!
//! The driver holds the callbacks and runs them at the event, since it
//! is what sees this node's own events in order: a watch of the status
//! could miss a short-lived Up. A callback runs on tokio's blocking
//! pool, so one that blocks or panics holds up neither the membership
//! nor the other callbacks; a panic is logged. The removal callbacks
//! also run when the driver stops for any other reason (the system
//! terminates, the cluster shuts down), as Akka's do; they run there on
//! the driver's task itself, since the runtime may be closing.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::member::{ClusterEvent, MemberStatus, UniqueAddress};

/// A callback registered with `Cluster::register_on_member_up` or
/// `Cluster::register_on_member_removed`.
pub(crate) type MemberCallback = Box<dyn FnOnce() + Send + 'static>;

/// The callbacks not yet run.
#[derive(Default)]
pub(crate) struct MemberCallbacks {
    on_up: Vec<MemberCallback>,
    on_removed: Vec<MemberCallback>,
}

impl MemberCallbacks {
    /// Keeps `callback` for this node's Up, or runs it now when this
    /// node (`self_status`) is Up already.
    pub(crate) fn on_up(&mut self, callback: MemberCallback, self_status: Option<MemberStatus>) {
        if self_status == Some(MemberStatus::Up) {
            spawn(vec![callback]);
        } else {
            self.on_up.push(callback);
        }
    }

    /// Keeps `callback` for this node's removal.
    pub(crate) fn on_removed(&mut self, callback: MemberCallback) {
        self.on_removed.push(callback);
    }

    /// Runs what `event` (one of this node's `me`) triggers.
    pub(crate) fn event(&mut self, event: &ClusterEvent, me: &UniqueAddress) {
        match event {
            ClusterEvent::MemberUp { member } if member.unique_address() == *me => {
                spawn(std::mem::take(&mut self.on_up));
            }
            ClusterEvent::MemberRemoved { member, .. } if member.unique_address() == *me => {
                self.on_up.clear();
                spawn(std::mem::take(&mut self.on_removed));
            }
            _ => {}
        }
    }

    /// The driver stops: the removal callbacks run here and now; the Up
    /// callbacks never will.
    pub(crate) fn stopped(&mut self) {
        self.on_up.clear();
        for callback in self.on_removed.drain(..) {
            run(callback);
        }
    }
}

fn spawn(callbacks: Vec<MemberCallback>) {
    for callback in callbacks {
        tokio::task::spawn_blocking(move || run(callback));
    }
}

/// Runs `callback`; a panic is logged, not spread.
pub(crate) fn run(callback: MemberCallback) {
    if catch_unwind(AssertUnwindSafe(callback)).is_err() {
        tracing::error!("a cluster member callback panicked");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::MemberCallbacks;
    use crate::member::{ClusterEvent, MemberRecord, MemberStatus};
    use crate::node_id::NodeId;

    fn member(status: MemberStatus, up_number: u32) -> MemberRecord {
        MemberRecord {
            status,
            up_number,
            ..MemberRecord::joining(
                NodeId::new("h", 1, 1, 1),
                "1".to_owned(),
                Default::default(),
            )
        }
    }

    /// Akka's `registerOnMemberUp` waits for Up: WeaklyUp is not Up.
    #[tokio::test]
    async fn the_up_callbacks_wait_for_up_not_weakly_up() {
        let mut callbacks = MemberCallbacks::default();
        let (ran, mut ran_rx) = tokio::sync::mpsc::unbounded_channel();
        let weakly = member(MemberStatus::WeaklyUp, 0);
        let me = weakly.unique_address();
        let early = ran.clone();
        callbacks.on_up(
            Box::new(move || early.send("registered").expect("open")),
            Some(MemberStatus::WeaklyUp),
        );
        callbacks.event(&ClusterEvent::MemberWeaklyUp { member: weakly }, &me);
        assert!(ran_rx.try_recv().is_err(), "not on WeaklyUp");
        let up = member(MemberStatus::Up, 1);
        callbacks.event(&ClusterEvent::MemberUp { member: up }, &me);
        let first = tokio::time::timeout(Duration::from_secs(10), ran_rx.recv()).await;
        assert_eq!(first.expect("in time"), Some("registered"));
    }
}
