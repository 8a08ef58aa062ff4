//! keep-majority: the side with more counted members stays.

use crate::node_id::NodeId;
use crate::sbr::decision::Decision;
use crate::sbr::partition::{Counting, Partition};

/// Counting as few members as this side could have, and as many as the
/// other side could have: Leaving members here may be Exiting there, and
/// Joining members there may be Up there.
const CAUTIOUS_HERE: Counting = Counting {
    including_possibly_up: false,
    excluding_possibly_exiting: true,
};
const GENEROUS_THERE: Counting = Counting {
    including_possibly_up: true,
    excluding_possibly_exiting: false,
};

pub(crate) fn decide(view: &Partition, role: Option<&str>) -> Decision {
    if !view.indirectly_connected().is_empty() {
        return Decision::DownIndirectlyConnected;
    }
    let Some(lowest) = lowest_address(view, role, Counting::PLAIN) else {
        return Decision::DownAll;
    };
    let here = view.reachable_count(role, Counting::PLAIN);
    let there = view.unreachable_count(role, Counting::PLAIN);
    match majority(view, here, there, &lowest) {
        // Staying is safe only if the membership changes the other side may
        // have made during the partition do not turn the count around.
        Decision::DownUnreachable => match edge_case(view, role) {
            Decision::DownUnreachable => Decision::DownUnreachable,
            _ => Decision::DownAll,
        },
        decision => decision,
    }
}

/// The decision counted as cautiously as a concurrent membership change
/// requires.
fn edge_case(view: &Partition, role: Option<&str>) -> Decision {
    let Some(lowest) = lowest_address(view, role, CAUTIOUS_HERE) else {
        return Decision::DownAll;
    };
    let here = view.reachable_count(role, CAUTIOUS_HERE);
    let there = view.unreachable_count(role, GENEROUS_THERE);
    majority(view, here, there, &lowest)
}

fn majority(view: &Partition, here: usize, there: usize, lowest: &NodeId) -> Decision {
    if here == there {
        // Both sides know the same lowest address, so exactly one keeps it.
        if view.is_unreachable(lowest) {
            Decision::DownReachable
        } else {
            Decision::DownUnreachable
        }
    } else if here > there {
        Decision::DownUnreachable
    } else {
        Decision::DownReachable
    }
}

fn lowest_address(view: &Partition, role: Option<&str>, how: Counting) -> Option<NodeId> {
    view.counted(role, how).first().map(|m| m.node.clone())
}
