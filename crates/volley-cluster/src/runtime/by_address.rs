//! Members named by address alone (Akka's `Cluster.down(address)` and
//! `Cluster.leave(address)`), resolved to the incarnations this node
//! knows. An Akka address names one member, since a new incarnation
//! replaces the old; here the table may hold both for a while (the old
//! one until it is removed), so an address resolves to every incarnation
//! of it the table holds.

use volley_remote::wire::Address;

use crate::member::{ClusterState, UniqueAddress};

/// The members of `state` at `address`'s host and port, oldest
/// incarnation first; empty when this node knows none there.
pub(crate) fn members_at(state: &ClusterState, address: &Address) -> Vec<UniqueAddress> {
    let mut found: Vec<_> = state
        .members
        .iter()
        .filter(|m| *m.node.host() == *address.host() && m.node.port() == address.port())
        .map(|m| ((m.node.born_ms(), m.node.uid()), m.unique_address()))
        .collect();
    found.sort_by_key(|(age, _)| *age);
    found.into_iter().map(|(_, member)| member).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::member::{MemberRecord, MemberStatus};
    use crate::node_id::NodeId;

    fn record(host: &str, port: u16, uid: u64, started: u64) -> MemberRecord {
        let node = NodeId::new(host, port, uid, started);
        MemberRecord::joining(node, String::new(), Default::default()).with_status(MemberStatus::Up)
    }

    fn address(host_port: &str) -> Address {
        format!("volley://test@{host_port}").parse().unwrap()
    }

    #[test]
    fn an_address_names_every_incarnation_at_its_host_and_port_oldest_first() {
        let state = ClusterState {
            members: vec![
                record("10.0.0.1", 2552, 7, 200),
                record("10.0.0.1", 2553, 8, 100),
                record("10.0.0.2", 2552, 9, 100),
                record("10.0.0.1", 2552, 5, 100),
            ],
            ..ClusterState::default()
        };
        let uids = |a: &str| -> Vec<u64> {
            members_at(&state, &address(a))
                .iter()
                .map(|m| m.uid)
                .collect()
        };
        assert_eq!(uids("10.0.0.1:2552"), [5, 7]);
        assert_eq!(uids("10.0.0.1:2553"), [8]);
        assert_eq!(uids("10.0.0.3:2552"), Vec::<u64>::new());
    }
}
