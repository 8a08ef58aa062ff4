//! A graceful leave while messages are on their way.

use super::{serial, ProcessCluster};

/// Numbers sent by and to each node.
const SENT: u64 = 2_000;

/// Node 2 and the others send each other numbers, and node 2 leaves right
/// after its own sends: it is Removed everywhere, every number sent
/// arrived, both ways, and the leaver ran coordinated shutdown with
/// reason `ClusterLeaving` and terminated (as an Akka node that leaves;
/// its counter, outside the actors, is read after).
#[test]
fn a_node_that_leaves_with_messages_in_flight_loses_none() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(3);
    cluster.await_all_up();
    let (leaver, stays) = (2, [0, 1]);
    for s in stays {
        cluster.command(s, &format!("send {} {SENT}", cluster.port(leaver)));
        cluster.command(leaver, &format!("send {} {SENT}", cluster.port(s)));
    }
    // Every number is handed to remoting before the leave starts: on a
    // loaded machine a stay could otherwise read its `send` after the
    // leaver had already shut down, and its numbers were never in flight.
    for s in stays {
        cluster.await_report(s, &format!("SENT {}", cluster.port(leaver)));
        cluster.await_report(leaver, &format!("SENT {}", cluster.port(s)));
    }
    cluster.command(leaver, "leave");
    let gone = cluster.member(leaver).to_owned();
    cluster.await_seen(&stays, "Removed", &gone);
    for s in stays {
        cluster.await_count(s, SENT);
    }
    cluster.await_count(leaver, SENT * stays.len() as u64);
    cluster.await_report(leaver, "SHUTDOWN ClusterLeaving");
    cluster.await_report(leaver, "TERMINATED");
    cluster.exit(leaver);
}
