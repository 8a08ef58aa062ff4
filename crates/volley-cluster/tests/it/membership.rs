//! Membership through seed nodes: join, leave, down (Pekko
//! `JoinSeedNodeSpec`, `NodeUpSpec`, `MinMembersBeforeUpSpec`,
//! `NodeLeavingAndExitingAndBeingRemovedSpec`, `LeaderElectionSpec`).

use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig};

use crate::common::{all_up, run_until, seeded_cluster};

#[test]
fn five_members_join_through_seeds_and_all_see_everyone_up() {
    for seed in seeds(&[1, 2, 3]) {
        let (mut sim, addrs) = seeded_cluster(SimConfig::lan(seed, 5), 5);
        let took = run_until(&mut sim, Duration::from_secs(60), "all Up", |sim| {
            all_up(sim, &addrs)
        });
        eprintln!("seed {seed}: 5 members all Up everywhere after {took:?} of virtual time");
    }
}
