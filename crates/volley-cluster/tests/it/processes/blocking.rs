//! Links blocked at the relays, without the split-brain resolver: what
//! SWIM alone makes of them.

use volley_testkit::relay::LinkMode;

use super::{serial, ProcessCluster};

/// Every link to and from node 2 is blocked (its bytes held, as by a
/// network that black-holes them): the others see it Unreachable; once the
/// links pass again they see it Reachable, and nobody was downed. The
/// resolver is off: this is SWIM's part, and the resolver's would down the
/// cut node if the heal came after its `stable_after`.
#[test]
fn a_node_cut_off_by_the_relays_is_unreachable_then_reachable_after_the_heal() {
    let _turn = serial();
    let cluster = ProcessCluster::start_with(3, |_, config| config.strategy = "off".to_owned());
    cluster.await_all_up();
    let cut = cluster.member(2).to_owned();
    for other in [0, 1] {
        cluster.relays.set_link(other, 2, LinkMode::Block);
        cluster.relays.set_link(2, other, LinkMode::Block);
    }
    cluster.await_seen(&[0, 1], "Unreachable", &cut);
    cluster.relays.heal();
    cluster.await_seen(&[0, 1], "Reachable", &cut);
    cluster.assert_nobody_downed();
}
