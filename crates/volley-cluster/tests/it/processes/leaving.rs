//! A graceful leave while messages are on their way.

use super::{serial, ProcessCluster};

/// Numbers sent by and to each node.
const SENT: u64 = 2_000;

/// Node 2 sends the others numbers and leaves right after its sends: it
/// is Removed everywhere, every number it sent arrived (its remoting
/// writes what is queued before it stops, as Artery's flush on shutdown),
/// and it ran coordinated shutdown with reason `ClusterLeaving` and
/// terminated (as an Akka node that leaves; counters, outside the actors,
/// are read after).
///
/// The lanes are connected first (a number each way, awaited): the
/// promise is about what is queued when the leave starts, within
/// `shutdown_flush_timeout`, and a first handshake on a loaded machine
/// can take longer than that. Numbers the others send to a leaving node
/// get no promise, in Akka as here (those that arrive after its actors
/// stopped are dead letters there), so none are in flight that way.
#[test]
fn a_node_that_leaves_with_messages_in_flight_loses_none() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(3);
    cluster.await_all_up();
    let (leaver, stays) = (2, [0, 1]);
    for s in stays {
        cluster.command(s, &format!("send {} 1", cluster.port(leaver)));
        cluster.command(leaver, &format!("send {} 1", cluster.port(s)));
        cluster.await_count(s, 1);
    }
    cluster.await_count(leaver, stays.len() as u64);
    for s in stays {
        cluster.command(leaver, &format!("send {} {SENT}", cluster.port(s)));
    }
    for s in stays {
        cluster.await_report(leaver, &format!("SENT {} {SENT}", cluster.port(s)));
    }
    cluster.command(leaver, "leave");
    let gone = cluster.member(leaver).to_owned();
    cluster.await_seen(&stays, "Removed", &gone);
    for s in stays {
        cluster.await_count(s, SENT + 1);
    }
    cluster.await_report(leaver, "SHUTDOWN ClusterLeaving");
    cluster.await_report(leaver, "TERMINATED");
    cluster.exit(leaver);
}
