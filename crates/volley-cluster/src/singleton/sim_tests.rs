//! The singleton's placement rules in the simulator: each node's view is
//! built from the cluster events it saw (virtual time, seeded network),
//! and its duty applied as the manager applies it. The hand-over
//! messages are modelled as instant (the network and process tests carry
//! them for real); what this checks is the membership side: across a
//! leave, a crash and a partition, no two nodes ever run the instance.

use std::time::Duration;

use super::sim_model::{
    addr_of, end_once_removed, keep_majority_cluster, views, Model, LIMIT, STEP,
};
use crate::node_id::Addr;
use crate::sim::{seeds, Simulation};

/// The resolver's `stable_after` here, and the singleton's
/// `down_removal_margin`, as the settings advise.
const STABLE_AFTER: Duration = Duration::from_secs(7);

/// Runs until `until` holds of the model, observing at every step.
fn run(sim: &mut Simulation, model: &mut Model, what: &str, until: impl Fn(&Model) -> bool) {
    let seed = sim.seed();
    let end = sim.now() + LIMIT;
    while !until(model) {
        assert!(
            sim.now() < end,
            "seed {seed}: {what} not within {LIMIT:?}: {}",
            views(sim)
        );
        sim.run_for(STEP);
        model.observe(sim);
        assert!(
            model.most_running <= 1,
            "seed {seed}: two instances ({what}): {:?}",
            model.starts
        );
    }
}

/// The instance starts on the oldest; it moves after a leave of the
/// oldest, a crash of the next (downed by the resolver), and a partition
/// that cuts the third off alone (it downs itself, the others remove it):
/// never two running at once in any node's view, at any step.
#[test]
fn the_instance_moves_on_leave_crash_and_partition_and_never_runs_twice() {
    for seed in seeds(&[71, 72]) {
        let (mut sim, addrs) = keep_majority_cluster(seed, 5, STABLE_AFTER);
        let mut model = Model::new(STABLE_AFTER);
        run(&mut sim, &mut model, "a first instance", |m| {
            m.runner().is_some()
        });

        let first = model.runner().expect("running");
        sim.leave(&addr_of(&first));
        run(&mut sim, &mut model, "the move after a leave", |m| {
            m.runner().is_some_and(|r| r != first)
        });
        end_once_removed(&mut sim, &first, |sim| model.observe(sim));

        let second = model.runner().expect("running");
        sim.kill(&addr_of(&second));
        run(&mut sim, &mut model, "the move after a crash", |m| {
            m.runner().is_some_and(|r| r != second)
        });

        let third = model.runner().expect("running");
        let alone = vec![addr_of(&third)];
        let rest: Vec<Addr> = addrs
            .iter()
            .filter(|a| **a != addr_of(&third) && **a != addr_of(&first) && **a != addr_of(&second))
            .cloned()
            .collect();
        sim.partition(&[alone, rest]);
        run(&mut sim, &mut model, "the move after a partition", |m| {
            m.runner().is_some_and(|r| r != third)
        });
        assert_eq!(model.starts.len(), 4, "seed {seed}: {:?}", model.starts);
    }
}
