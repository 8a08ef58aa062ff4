//! "Watch the routees" across a cluster of three processes: this program
//! starts a cluster node with the master, then two copies of itself as
//! worker nodes that join it. The master finds the workers through the
//! cluster receptionist, runs a job over them, then starts a second job
//! and kills one worker node (kill -9) while it runs: the job is aborted
//! cleanly once the cluster removes that node. The logic is in
//! `cluster_workers_app.rs`.
//!
//! The split-brain resolver (keep-majority, the default) downs the killed
//! node once it has been unreachable for `stable_after`, shortened here
//! to two seconds; the master only reports what the cluster sees.
//!
//! `cargo run --example cluster_workers`

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};
use volley_cluster::{Cluster, ClusterEvent, ClusterSettings};
use volley_examples::cluster_workers_app::{listed_workers, registry, run_job, start_worker};
use volley_remote::Remoting;

const WAIT: Duration = Duration::from_secs(30);

fn settings(seed: &str) -> ClusterSettings {
    let mut settings = ClusterSettings {
        name: "workers".to_owned(),
        seed_nodes: vec![seed.to_owned()],
        gossip_interval: Duration::from_millis(200),
        leader_actions_interval: Duration::from_millis(200),
        seed_node_timeout: Duration::from_millis(500),
        retry_unsuccessful_join_after: Duration::from_millis(500),
        ..ClusterSettings::default()
    };
    settings.swim.probe_period = Duration::from_millis(300);
    settings.swim.probe_rtt = Duration::from_millis(150);
    settings.swim.suspect_to_down_after = Some(Duration::from_secs(2));
    settings.split_brain_resolver.stable_after = Some(Duration::from_secs(2));
    settings
}

async fn node() -> Result<(ActorSystem, Remoting), Box<dyn std::error::Error>> {
    let system = ActorSystem::new("workers")?;
    let remoting = Remoting::start(&system, registry()?).await?;
    Ok((system, remoting))
}

/// A worker node: joins through `seed`, registers a worker, serves until
/// its stdin closes (or it is killed).
async fn worker(seed: &str, index: &str) -> Result<(), Box<dyn std::error::Error>> {
    let (system, remoting) = node().await?;
    let _cluster = Cluster::start(&system, &remoting, settings(seed))?;
    start_worker(
        &system,
        &format!("worker-{index}"),
        Duration::from_millis(300),
    )?;
    println!("READY {}", remoting.address());
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {}
    })
    .await?;
    system.terminate().await;
    Ok(())
}

/// Prints what the cluster sees of the killed node: Unreachable, then
/// Downed by the split-brain resolver, then Removed.
struct Reporter;

impl Actor for Reporter {
    type Msg = ClusterEvent;

    fn handle(&mut self, _ctx: &mut Context<Self>, event: ClusterEvent) -> HandleResult {
        let seen = match &event {
            ClusterEvent::UnreachableMember { member } => Some(("unreachable", member)),
            ClusterEvent::MemberDowned { member } => Some(("downed", member)),
            ClusterEvent::MemberRemoved { member, .. } => Some(("removed", member)),
            _ => None,
        };
        if let Some((what, member)) = seen {
            println!("member {} is {what}", member.unique_address());
        }
        Ok(())
    }
}

fn report_membership(system: &ActorSystem) -> Result<(), Box<dyn std::error::Error>> {
    let reporter: ActorRef<ClusterEvent> = system.spawn("reporter", Props::new(|| Reporter))?;
    system.event_stream().subscribe(reporter);
    Ok(())
}

fn start_worker_node(
    seed: &str,
    index: usize,
) -> Result<(Child, BufReader<ChildStdout>), Box<dyn std::error::Error>> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["worker", seed, &index.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    while !line.starts_with("READY") {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            return Err("a worker node did not start".into());
        }
    }
    println!("worker node {index} is up: {}", line.trim_end());
    Ok((child, stdout))
}

async fn master() -> Result<bool, Box<dyn std::error::Error>> {
    let (system, remoting) = node().await?;
    let seed = remoting.address().to_string();
    // Held for the whole run; the cluster stops with the system.
    let _cluster = Cluster::start(&system, &remoting, settings(&seed))?;
    report_membership(&system)?;
    let mut children = vec![start_worker_node(&seed, 1)?, start_worker_node(&seed, 2)?];

    let started = Instant::now();
    let mut workers = listed_workers(&system, WAIT).await?;
    while workers.len() < 2 {
        if started.elapsed() > WAIT {
            return Err("the workers were not listed".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        workers = listed_workers(&system, WAIT).await?;
    }
    println!(
        "found {} workers through the cluster receptionist",
        workers.len()
    );

    let first = run_job(&system, "job-1", workers.clone(), (1..=10).collect()).await?;
    println!("job 1: {first:?}");

    let job = {
        let system = system.clone();
        tokio::spawn(async move {
            run_job(&system, "job-2", workers, (1..=10).collect())
                .await
                .map_err(|e| e.to_string())
        })
    };
    let (mut killed, _) = children.remove(1);
    killed.kill()?;
    println!("killed worker node 2 while job 2 runs");
    let second = tokio::time::timeout(WAIT, job).await???;
    println!("job 2: {second:?}");

    for (mut child, _) in children {
        drop(child.stdin.take());
        child.wait()?;
    }
    let _ = killed.wait();
    system.terminate().await;
    Ok(first == Ok(385) && second.is_err())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let outcome = match args.get(1).map(String::as_str) {
        Some("worker") if args.len() == 4 => worker(&args[2], &args[3]).await.map(|()| true),
        _ => master().await,
    };
    match outcome {
        Ok(true) => {}
        Ok(false) => {
            eprintln!("cluster_workers: unexpected outcome");
            std::process::exit(1);
        }
        Err(error) => {
            eprintln!("cluster_workers failed: {error}");
            std::process::exit(1);
        }
    }
}
