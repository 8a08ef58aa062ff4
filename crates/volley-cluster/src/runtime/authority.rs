//! The cluster as volley-remote's membership authority
//! (docs/reference/remoting.md#membership-authority): the transport asks
//! it whether a node is a member, at once, from the driver's published
//! member table, and hands it its verdicts on members, which become the
//! driver's inputs.

use std::sync::Arc;

use tokio::sync::mpsc;
use volley_remote::transport::{MemberReport, MembershipAuthority};
use volley_remote::wire::Address;

use crate::runtime::driver::Command;
use crate::runtime::shared::Shared;

/// The authority installed on this node's remoting.
pub(crate) struct Authority {
    pub(crate) shared: Arc<Shared>,
    pub(crate) commands: mpsc::UnboundedSender<Command>,
}

impl MembershipAuthority for Authority {
    fn is_member(&self, address: &Address, uid: u64) -> bool {
        self.shared.is_member(address.host(), address.port(), uid)
    }

    fn report(&self, address: &Address, uid: u64, report: MemberReport) {
        // Closed only once the driver stopped (the system terminated):
        // nothing is left to decide.
        let _stopped = self.commands.send(Command::Report {
            address: address.clone(),
            uid,
            report,
        });
    }
}
