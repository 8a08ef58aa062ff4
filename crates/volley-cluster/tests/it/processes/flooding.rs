//! A flood of malformed cluster packets (design §8 step 9).

use super::{serial, ProcessCluster};

/// Packets node 2 sends node 0, 1 KiB each: 100 MiB in all.
const FLOOD: u64 = 100_000;

/// More than the flooded node may grow by: its queues are bounded (the
/// transport's inbound rate, the driver's queue), so the flood may not
/// stay in its memory.
const GROWTH_LIMIT_KIB: u64 = 48 * 1024;

/// Node 2 floods node 0 with malformed SWIM packets: whatever reaches
/// node 0 is refused and counted, its memory stays bounded, and nobody
/// is downed.
#[test]
fn a_flood_of_malformed_packets_is_refused_in_bounded_memory() {
    let _turn = serial();
    let mut cluster = ProcessCluster::start(3);
    cluster.await_all_up();
    // A first number makes sure node 2 has shaken hands with node 0.
    cluster.command(2, &format!("send {} 1", cluster.port(0)));
    cluster.await_count(0, 1);
    let before = cluster.resident_kib(0);
    cluster.command(2, &format!("flood {} {FLOOD}", cluster.port(0)));
    let flooded = cluster.numbers(2, "FLOODED ");
    let deadline = std::time::Instant::now() + super::cluster::step();
    let counted = loop {
        cluster.command(0, "counts");
        let counts = cluster.numbers(0, "COUNTS ");
        // Refused by the driver, dropped at its queue, or over the
        // transport's inbound rate.
        let refused: u64 = counts[..3].iter().sum();
        if counts[0] > 0 && refused > 0 {
            break counts;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node 0 counted {counts:?} of {flooded:?}\n{}",
            cluster.tail()
        );
    };
    let growth = cluster.resident_kib(0).saturating_sub(before);
    assert!(
        growth < GROWTH_LIMIT_KIB,
        "node 0 grew by {growth} KiB under the flood (counts {counted:?}, sent {flooded:?})"
    );
    eprintln!("flood: node 0 grew {growth} KiB; counts {counted:?}; sent, dropped at the sender {flooded:?}");
    // A loaded machine may see a member suspected for a moment while the
    // flood takes the CPU; nobody is downed, and all heal.
    cluster.assert_nobody_downed();
    for i in 0..3 {
        for unreachable in cluster.reports(i, "EVENT Unreachable ") {
            let member = &unreachable["EVENT Unreachable ".len()..];
            cluster.await_seen(&[i], "Reachable", member);
        }
    }
}
