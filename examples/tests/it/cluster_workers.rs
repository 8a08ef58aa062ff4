//! The cluster workers example on three in-process nodes over loopback:
//! the master on the first finds the workers of the other two through the
//! cluster receptionist, and aborts its job cleanly when a worker's node
//! leaves the cluster mid-job.

use std::time::Duration;

use volley::{Listing, Settings};
use volley_cluster::{Cluster, ClusterSettings};
use volley_examples::cluster_workers_app::{
    listed_workers, registry, run_job, start_worker, workers_key, JobError, Square,
};
use volley_remote::RemoteSettings;
use volley_testkit::remote::{Node, Nodes};
use volley_testkit::{dilated, FishingOutcome, TestProbe};

fn deadline() -> Duration {
    dilated(Duration::from_secs(20))
}

/// Timings a few times faster than the defaults.
fn quick(seeds: &[&Node]) -> ClusterSettings {
    let mut settings = ClusterSettings {
        name: "workers".to_owned(),
        seed_nodes: seeds
            .iter()
            .map(|n| n.remoting.address().to_string())
            .collect(),
        gossip_interval: Duration::from_millis(100),
        leader_actions_interval: Duration::from_millis(100),
        seed_node_timeout: Duration::from_millis(500),
        retry_unsuccessful_join_after: Duration::from_millis(500),
        ..ClusterSettings::default()
    };
    settings.swim.probe_period = Duration::from_millis(300);
    settings.swim.probe_rtt = Duration::from_millis(150);
    settings.swim.suspect_to_down_after = Some(Duration::from_secs(5));
    settings
}

/// Waits until the master's node lists `count` workers.
fn await_workers(node: &Node, count: usize) {
    let probe = TestProbe::<Listing<Square>>::new(&node.system);
    node.system
        .receptionist()
        .expect("a receptionist")
        .subscribe(&workers_key(), probe.actor_ref());
    probe.fish_for_within(deadline(), |listing| {
        if listing.services.len() == count {
            FishingOutcome::Complete
        } else {
            FishingOutcome::Continue
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_every_members_workers_and_aborts_when_a_worker_node_leaves() {
    let mut nodes = Nodes::new(|| registry().expect("unique ids"));
    let mut members = Vec::new();
    for _ in 0..3 {
        let node = nodes
            .start_with("workers", Settings::default(), RemoteSettings::default())
            .await;
        members.push(node);
    }
    let seeds: Vec<&Node> = members.iter().collect();
    let clusters: Vec<Cluster> = members
        .iter()
        .map(|node| Cluster::start(&node.system, &node.remoting, quick(&seeds)).expect("starts"))
        .collect();
    for (index, node) in members.iter().enumerate().skip(1) {
        let name = format!("worker-{index}");
        start_worker(&node.system, &name, Duration::from_millis(20)).expect("spawned");
    }
    await_workers(&members[0], 2);

    let workers = listed_workers(&members[0].system, deadline())
        .await
        .expect("a listing");
    let outcome = run_job(&members[0].system, "job-1", workers, (0..10).collect())
        .await
        .expect("the master answers");
    assert_eq!(outcome, Ok((0..10u64).map(|n| n * n).sum()));

    // A worker that holds its tasks, on the node about to leave.
    start_worker(&members[2].system, "slow", Duration::from_secs(600)).expect("spawned");
    await_workers(&members[0], 3);
    let workers = listed_workers(&members[0].system, deadline())
        .await
        .expect("a listing");
    let master = members[0].system.clone();
    let job = tokio::spawn(async move {
        run_job(&master, "job-2", workers, (0..9).collect())
            .await
            .map_err(|e| e.to_string())
    });
    clusters[2].leave().expect("the cluster runs");
    let outcome = tokio::time::timeout(deadline(), job)
        .await
        .expect("the job ends within the deadline")
        .expect("the job task")
        .expect("the master answers");
    match outcome {
        Err(JobError::Aborted { worker, unanswered }) => {
            assert!(
                worker.contains(members[2].remoting.address().to_string().as_str())
                    || worker.contains("slow")
                    || worker.contains("worker-2"),
                "{worker}"
            );
            assert!(unanswered > 0);
        }
        other => panic!("the job was not aborted: {other:?}"),
    }
    nodes.stop_all().await;
}
