//! The cluster receptionist's registry on the simulator (design §5): a
//! registration reaches every member, by custom broadcast or, for a set
//! too large to broadcast or a lossy network, by anti-entropy; a removed
//! member's services leave every registry.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig, Simulation};
use volley_cluster::{Addr, ServiceEntry, UniqueAddress};

use crate::common::{all_up, run_until, seeded_cluster};

const LIMIT: Duration = Duration::from_secs(120);

fn entry(node: &Addr, name: &str, path_len: usize) -> ServiceEntry {
    let padding = "p".repeat(path_len);
    ServiceEntry {
        key: Arc::from("workers"),
        wire_type_id: 7,
        path: Arc::from(
            format!("volley://sys@{}:{}/user/{name}{padding}", node.0, node.1).as_str(),
        ),
        uid: 1,
    }
}

/// The services of `owner` that the node at `observer` holds.
fn held(sim: &Simulation, observer: &Addr, owner: &UniqueAddress) -> BTreeSet<ServiceEntry> {
    let Some(core) = sim.node(observer) else {
        return BTreeSet::new();
    };
    core.services()
        .get(owner)
        .map(|set| set.entries.clone())
        .unwrap_or_default()
}

fn everyone_holds(
    sim: &Simulation,
    group: &[Addr],
    owner: &UniqueAddress,
    wanted: &BTreeSet<ServiceEntry>,
) -> bool {
    group.iter().all(|addr| held(sim, addr, owner) == *wanted)
}

fn formed(seed: u64, members: usize) -> (Simulation, Vec<Addr>, UniqueAddress) {
    let (mut sim, addrs) = seeded_cluster(SimConfig::lan(seed, members as u32), members);
    run_until(&mut sim, LIMIT, "all Up everywhere", |sim| {
        all_up(sim, &addrs)
    });
    let owner = sim
        .node(&addrs[0])
        .expect("running")
        .unique_address()
        .clone();
    (sim, addrs, owner)
}

#[test]
fn a_registration_and_a_deregistration_reach_every_member() {
    for seed in seeds(&[11, 12]) {
        let (mut sim, addrs, owner) = formed(seed, 5);
        let (a, b) = (entry(&addrs[0], "a", 0), entry(&addrs[0], "b", 0));
        sim.register_service(&addrs[0], a.clone(), true);
        sim.register_service(&addrs[0], b.clone(), true);
        let both = BTreeSet::from([a.clone(), b]);
        run_until(&mut sim, LIMIT, "both services everywhere", |sim| {
            everyone_holds(sim, &addrs, &owner, &both)
        });
        sim.register_service(&addrs[0], a, false);
        let one: BTreeSet<_> = both.into_iter().skip(1).collect();
        run_until(&mut sim, LIMIT, "one service left everywhere", |sim| {
            everyone_holds(sim, &addrs, &owner, &one)
        });
    }
}

#[test]
fn a_set_too_large_to_broadcast_travels_by_anti_entropy_over_a_lossy_network() {
    for seed in seeds(&[13]) {
        let (mut sim, addrs, owner) = formed(seed, 5);
        sim.set_loss(0.2);
        let mut wanted = BTreeSet::new();
        for index in 0..8 {
            let service = entry(&addrs[0], &format!("w{index}"), 200);
            wanted.insert(service.clone());
            sim.register_service(&addrs[0], service, true);
        }
        run_until(&mut sim, LIMIT, "the large set everywhere", |sim| {
            everyone_holds(sim, &addrs, &owner, &wanted)
        });
    }
}

#[test]
fn a_member_that_leaves_takes_its_services_out_of_every_registry() {
    for seed in seeds(&[14]) {
        let (mut sim, addrs, owner) = formed(seed, 4);
        let service = BTreeSet::from([entry(&addrs[0], "a", 0)]);
        sim.register_service(&addrs[0], entry(&addrs[0], "a", 0), true);
        run_until(&mut sim, LIMIT, "the service everywhere", |sim| {
            everyone_holds(sim, &addrs, &owner, &service)
        });
        sim.leave(&addrs[0]);
        let others = &addrs[1..];
        run_until(&mut sim, LIMIT, "the service gone from the others", |sim| {
            others.iter().all(|addr| {
                sim.node(addr)
                    .is_some_and(|core| core.services().get(&owner).is_none())
            })
        });
    }
}

/// Akka's `ClusterReceptionistSpec` "handle a new incarnation of the same
/// node well": a member killed and started again on its address (a new
/// uid) registers a service anew; every member lists the new
/// incarnation's service and, once the old one is removed, nothing of it.
#[test]
fn a_restarted_members_old_services_go_and_its_new_ones_are_listed() {
    for seed in seeds(&[15]) {
        let (mut sim, addrs, _) = formed(seed, 4);
        let restarted = addrs[3].clone();
        let old_owner = sim
            .node(&restarted)
            .expect("running")
            .unique_address()
            .clone();
        let old_service = BTreeSet::from([entry(&restarted, "old", 0)]);
        sim.register_service(&restarted, entry(&restarted, "old", 0), true);
        run_until(&mut sim, LIMIT, "the old service everywhere", |sim| {
            everyone_holds(sim, &addrs, &old_owner, &old_service)
        });
        sim.kill(&restarted);
        sim.run_for(Duration::from_secs(2));
        sim.start_node(&restarted.0, restarted.1);
        let seed_node = sim.node(&addrs[0]).expect("running").identity().clone();
        sim.join(&restarted, &seed_node);
        let new_owner = sim
            .node(&restarted)
            .expect("running")
            .unique_address()
            .clone();
        assert_ne!(new_owner, old_owner, "a new incarnation");
        let new_service = BTreeSet::from([entry(&restarted, "new", 0)]);
        run_until(
            &mut sim,
            LIMIT,
            "the new incarnation Up everywhere",
            |sim| all_up(sim, &addrs),
        );
        sim.register_service(&restarted, entry(&restarted, "new", 0), true);
        let others = &addrs[..3];
        run_until(&mut sim, LIMIT, "new listed, old gone, everywhere", |sim| {
            everyone_holds(sim, &addrs, &new_owner, &new_service)
                && others
                    .iter()
                    .all(|addr| held(sim, addr, &old_owner).is_empty())
        });
    }
}
