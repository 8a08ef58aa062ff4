//! A probe's auto-pilot and message filter, run by its actor on each
//! message before the test sees it (Akka's `setAutoPilot`, `ignoreMsg`).

use std::fmt;

use crate::probe::ProbeMsg;
use crate::TestProbe;

/// What a [`TestProbe::set_auto_pilot`] pilot says after each message
/// (Akka's `TestActor.AutoPilot` results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoPilot {
    /// Keep running the pilot on the messages that follow.
    KeepRunning,
    /// Drop the pilot: the messages that follow are only queued (Akka's
    /// `NoAutoPilot`).
    Stop,
}

pub(crate) type Pilot<M> = Box<dyn FnMut(&M) -> AutoPilot + Send>;
pub(crate) type Ignore<M> = Box<dyn Fn(&M) -> bool + Send>;

impl<M: Send + fmt::Debug + 'static> TestProbe<M> {
    /// Runs `pilot` on each message the probe's actor receives from now
    /// on, before it is queued for the test (Akka's `setAutoPilot`): to
    /// answer requests through the reply-to ref they carry, or to pass
    /// them on, while the test still sees every message. The pilot runs on
    /// the probe's actor, in message order; it returns
    /// [`AutoPilot::Stop`] to drop itself. Messages sent to the probe
    /// after this call returns meet the pilot; one set later replaces it.
    /// Keep it from panicking: a panic fails the probe's actor like any
    /// actor's, and that message (and the pilot) is lost.
    pub fn set_auto_pilot(&self, pilot: impl FnMut(&M) -> AutoPilot + Send + 'static) {
        self.control.tell(ProbeMsg::Pilot(Some(Box::new(pilot))));
    }

    /// Drops the auto-pilot, if any.
    pub fn clear_auto_pilot(&self) {
        self.control.tell(ProbeMsg::Pilot(None));
    }

    /// Drops, without showing them to the test, the messages for which
    /// `ignore` is true that the probe receives from now on (Akka's
    /// `ignoreMsg`); messages already received stay. An auto-pilot still
    /// sees them. Replaces an earlier filter.
    pub fn ignore_msg(&self, ignore: impl Fn(&M) -> bool + Send + 'static) {
        self.control.tell(ProbeMsg::Ignore(Some(Box::new(ignore))));
    }

    /// Stops ignoring messages (Akka's `ignoreNoMsg`).
    pub fn ignore_no_msg(&self) {
        self.control.tell(ProbeMsg::Ignore(None));
    }
}
