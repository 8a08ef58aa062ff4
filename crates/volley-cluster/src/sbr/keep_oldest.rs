//! keep-oldest: the side with the oldest counted member stays.

use crate::sbr::decision::Decision;
use crate::sbr::partition::{Counting, Partition};

pub(crate) fn decide(view: &Partition, down_if_alone: bool, role: Option<&str>) -> Decision {
    if !view.indirectly_connected().is_empty() {
        return Decision::DownIndirectlyConnected;
    }
    match decide_counting(view, down_if_alone, role, Counting::PLAIN, Counting::PLAIN) {
        // Staying is safe only if a Leaving member here, possibly Exiting
        // there, does not change who is oldest or alone; with down_if_alone
        // a Joining member, possibly Up there, can change who is alone.
        Decision::DownUnreachable => {
            let cautious = Counting {
                including_possibly_up: down_if_alone,
                excluding_possibly_exiting: true,
            };
            let oldest_among = Counting {
                including_possibly_up: false,
                excluding_possibly_exiting: true,
            };
            match decide_counting(view, down_if_alone, role, oldest_among, cautious) {
                Decision::DownUnreachable => Decision::DownUnreachable,
                _ => Decision::DownAll,
            }
        }
        decision => decision,
    }
}

/// Finds the oldest among the members `oldest_among` counts and compares
/// the sides as `sizes` counts them.
fn decide_counting(
    view: &Partition,
    down_if_alone: bool,
    role: Option<&str>,
    oldest_among: Counting,
    sizes: Counting,
) -> Decision {
    let counted = view.counted(role, oldest_among);
    let Some(oldest) = counted.iter().min_by(|a, b| a.age_key().cmp(&b.age_key())) else {
        return Decision::DownAll;
    };
    let oldest_here = !view.is_unreachable(&oldest.node);
    let here = view.reachable_count(role, sizes);
    let there = view.unreachable_count(role, sizes);
    oldest_decision(down_if_alone, oldest_here, here, there)
}

fn oldest_decision(down_if_alone: bool, oldest_here: bool, here: usize, there: usize) -> Decision {
    // With two members, an oldest alone is no worse off than the other, so
    // it stays; only an oldest cut off from two or more others goes.
    if oldest_here {
        if down_if_alone && here == 1 && there >= 2 {
            Decision::DownReachable
        } else {
            Decision::DownUnreachable
        }
    } else if down_if_alone && there == 1 && here >= 2 {
        Decision::DownUnreachable
    } else {
        Decision::DownReachable
    }
}
