//! kill -9 of one node, downed by hand (standing in for the split-brain
//! resolver, which the runtime does not run yet).

use std::time::Duration;

use super::{serial, ProcessCluster};

/// Each of four survivors watches the sink of node 4, which is then
/// killed: every survivor sees it Unreachable; one survivor downs it;
/// every survivor sees it Removed and gets exactly one `Terminated`.
#[test]
fn a_killed_node_is_unreachable_then_removed_and_each_watch_ends_once() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(5);
    cluster.await_all_up();
    let (victim, survivors) = (4, [0, 1, 2, 3]);
    for s in survivors {
        cluster.command(s, &format!("watch {}", cluster.port(victim)));
        let watched_by = format!("watched-by {}", cluster.port(s));
        cluster.await_answer(victim, &watched_by, "WATCHED ", "1");
    }
    let gone = cluster.member(victim).to_owned();
    let (port, uid) = (cluster.port(victim), cluster.uid(victim));
    cluster.kill(victim);
    cluster.await_seen(&survivors, "Unreachable", &gone);
    cluster.command(0, &format!("down {port} {uid}"));
    cluster.await_seen(&survivors, "Removed", &gone);
    let sink = format!("TERMINATED volley://cluster@127.0.0.1:{port}/user/sink");
    for s in survivors {
        cluster.await_report(s, &sink);
    }
    // Time passing is the test: no second `Terminated` comes.
    std::thread::sleep(Duration::from_millis(300));
    for s in survivors {
        let ends = cluster.reports(s, &sink).len();
        assert_eq!(ends, 1, "node {s}: {ends} Terminated\n{}", cluster.tail());
    }
}
