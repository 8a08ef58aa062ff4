//! The cluster singleton on the network: in-process nodes on loopback,
//! each instance reporting its start and stop to one shared probe, which
//! checks that no more than one instance is ever alive.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use volley::{Actor, Context, DeadLetter, DeadLetterReason, HandleResult, Props};
use volley_cluster::singleton::{register_singleton_types, ClusterSingleton, SingletonSettings};
use volley_cluster::{Cluster, ClusterEvent, MemberStatus, UniqueAddress};
use volley_remote::Registry;
use volley_testkit::remote::{Node, Nodes};
use volley_testkit::{await_cond_within, FishingOutcome, TestProbe};

use super::{deadline, expect_removed, form, oldest_index, start_nodes};

/// What every instance reports, whichever node it runs on.
#[derive(Default)]
struct LiveProbe {
    state: Mutex<ProbeState>,
}

#[derive(Default, Debug)]
struct ProbeState {
    live: Vec<u16>,
    most_live: usize,
    starts: Vec<u16>,
    received: Vec<u32>,
    /// For each start: the members its node still knew of then.
    known_at_start: Vec<Vec<UniqueAddress>>,
    /// For each stop: its node's own status then.
    stopped_as: Vec<Option<MemberStatus>>,
}

impl LiveProbe {
    /// Waits for `cond` on the probe's state; a timeout shows the state.
    #[track_caller]
    fn await_state(&self, what: &str, cond: impl Fn(&ProbeState) -> bool) {
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            await_cond_within(deadline(), what, || self.with(|s| cond(s)));
        }));
        if let Err(panic) = waited {
            let state = self.with(|s| {
                let got: BTreeSet<u32> = s.received.iter().copied().collect();
                let top = got.last().copied().unwrap_or(0);
                let missing: Vec<u32> = (1..=top).filter(|n| !got.contains(n)).collect();
                format!(
                    "starts {:?}, live {:?}, most live {}, {} received up to {top}, missing {:?}, stopped as {:?}",
                    s.starts,
                    s.live,
                    s.most_live,
                    s.received.len(),
                    missing,
                    s.stopped_as
                )
            });
            let shown: String = state.chars().take(2_000).collect();
            eprintln!("probe state at the timeout: {shown}");
            std::panic::resume_unwind(panic);
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut ProbeState) -> T) -> T {
        f(&mut self.state.lock().expect("probe lock"))
    }
    fn starts(&self) -> Vec<u16> {
        self.with(|s| s.starts.clone())
    }
    fn received(&self) -> usize {
        self.with(|s| s.received.len())
    }
}

/// The singleton under test: counts what it gets.
struct Instance {
    probe: Arc<LiveProbe>,
    cluster: Cluster,
    port: u16,
    /// How long it blocks on each message (a slow instance builds a
    /// backlog its hand-over must drain).
    per_message: Duration,
}

impl Actor for Instance {
    type Msg = u32;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        let known = self
            .cluster
            .state()
            .members
            .iter()
            .map(|m| m.unique_address())
            .collect();
        self.probe.with(|s| {
            s.live.push(self.port);
            s.most_live = s.most_live.max(s.live.len());
            s.starts.push(self.port);
            s.known_at_start.push(known);
        });
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, n: u32) -> HandleResult {
        if !self.per_message.is_zero() {
            // Work, not synchronisation: the mailbox fills meanwhile.
            std::thread::sleep(self.per_message);
        }
        self.probe.with(|s| s.received.push(n));
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let status = self.cluster.state().self_member.map(|m| m.status);
        self.probe.with(|s| {
            s.live.retain(|p| *p != self.port);
            s.stopped_as.push(status);
        });
    }
}

fn singleton_nodes() -> Nodes {
    Nodes::new(|| {
        let mut registry = Registry::default();
        registry.register::<u32>(1).expect("a fresh registry");
        register_singleton_types(&mut registry, 50).expect("free ids");
        registry
    })
}

fn settings() -> SingletonSettings {
    let mut settings = SingletonSettings::new("counter");
    settings.retry_interval = Duration::from_millis(200);
    settings.down_removal_margin = super::STABLE_AFTER;
    settings
}

/// Starts the singleton on every node; its handle per node.
fn start_singletons(
    members: &[Node],
    probe: &Arc<LiveProbe>,
    settings: &SingletonSettings,
) -> Vec<ClusterSingleton<u32>> {
    start_slow_singletons(members, probe, settings, Duration::ZERO)
}

/// Starts the singleton on every node, each instance blocking
/// `per_message` on every message.
fn start_slow_singletons(
    members: &[Node],
    probe: &Arc<LiveProbe>,
    settings: &SingletonSettings,
    per_message: Duration,
) -> Vec<ClusterSingleton<u32>> {
    members
        .iter()
        .map(|node| {
            let cluster = Cluster::get(&node.system).expect("a cluster");
            let (probe, port) = (probe.clone(), node.remoting.address().port());
            let props = Props::new(move || Instance {
                probe: probe.clone(),
                cluster: cluster.clone(),
                port,
                per_message,
            });
            ClusterSingleton::start(&node.system, &node.remoting, settings.clone(), props)
                .expect("the singleton starts")
        })
        .collect()
}

/// Sends `count` numbers through `proxy` on a thread of its own, paced so
/// that they span a hand-over.
fn send_paced(proxy: volley::ActorRef<u32>, count: u32) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for n in 1..=count {
            proxy.tell(n);
            if n % 20 == 0 {
                // Pacing, not synchronisation: the sends span the leave.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    })
}

/// How the oldest goes. Either way coordinated shutdown runs (reason
/// `ClusterLeaving` or `Terminate`): the node becomes Leaving, the next
/// oldest asks for the hand-over, the `cluster-exiting` task waits for
/// the instance to stop, and only then does the node confirm its exit.
#[derive(Clone, Copy, Debug)]
enum Departure {
    /// `Cluster::leave`.
    Leave,
    /// `ActorSystem::terminate`.
    Terminate,
}

/// How the instance and the sender behave during the departure.
#[derive(Clone, Copy, Debug)]
struct Load {
    /// Numbers sent.
    count: u32,
    /// How long the instance blocks on each.
    per_message: Duration,
    /// How many must have arrived before the oldest departs.
    before_departure: usize,
}

const FAST: Load = Load {
    count: 3_000,
    per_message: Duration::ZERO,
    before_departure: 200,
};

/// Three nodes: the instance runs on the oldest only; the oldest departs
/// while another node's proxy sends 3,000 numbers; the instance moves to
/// the next oldest, never two alive, and every number arrives exactly
/// once (the proxy paused and buffered during the move). Returns the
/// status the old instance's node had when it stopped.
async fn hand_over_on(departure: Departure, load: Load) -> Option<MemberStatus> {
    let mut nodes = singleton_nodes();
    let members = start_nodes(&mut nodes, 3).await;
    let (clusters, probes) = form(&members);
    let probe = Arc::new(LiveProbe::default());
    // Room for every number: this test is about the hand-over, not the
    // bound (the last test is).
    let mut settings = settings();
    settings.buffer_size = 10_000;
    let singletons = start_slow_singletons(&members, &probe, &settings, load.per_message);
    let oldest = oldest_index(&clusters);
    let port_of = |i: usize| members[i].remoting.address().port();
    await_cond_within(deadline(), "the instance starts on the oldest", || {
        probe.starts() == vec![port_of(oldest)]
    });

    let sender = (oldest + 1) % 3;
    let count = load.count;
    let sending = send_paced(singletons[sender].proxy().clone(), count);
    await_cond_within(deadline(), "the first numbers arrive", || {
        probe.received() >= load.before_departure
    });
    let gone = clusters[oldest].self_member().clone();
    match departure {
        Departure::Leave => clusters[oldest].leave().expect("the cluster runs"),
        Departure::Terminate => members[oldest].system.terminate().await,
    }
    for (_, events) in probes.iter().enumerate().filter(|(i, _)| *i != oldest) {
        expect_removed(events, &gone, MemberStatus::Exiting);
    }
    sending.join().expect("the sender");
    probe.await_state("the instance moves and gets every number", |s| {
        s.starts.len() == 2 && s.received.len() == count as usize
    });
    let next = clusters[sender]
        .state()
        .members
        .iter()
        .min_by_key(|m| (m.up_number, m.unique_address()))
        .expect("two members")
        .node
        .port();
    let state = probe.with(|s| std::mem::take(&mut *s));
    assert_eq!(state.most_live, 1, "{departure:?}: {state:?}");
    assert_eq!(state.starts[1], next, "{departure:?}: {state:?}");
    let distinct: BTreeSet<u32> = state.received.iter().copied().collect();
    assert_eq!(distinct.len(), count as usize, "each number once");
    assert_eq!(singletons[sender].dropped(), 0);
    nodes.stop_all().await;
    state.stopped_as.first().copied().flatten()
}

/// Whether the old instance stopped while its node was leaving and still
/// a member: the leader removes it only after it confirmed, and it
/// confirms after the hand-over (`None`: it no longer knew itself, it had
/// been removed before its instance stopped).
fn stopped_while_leaving(stopped_as: Option<MemberStatus>) -> bool {
    matches!(
        stopped_as,
        Some(MemberStatus::Leaving | MemberStatus::Exiting)
    )
}

/// `Cluster::leave` of the oldest, whose instance is slow (1 ms a
/// message) and has hundreds of numbers queued when its node leaves:
/// coordinated shutdown runs, the instance handles every queued number
/// before it stops, its node is removed only after that (the
/// `cluster-exiting-done` confirmation), and the next instance starts
/// only then, gets the rest, and nothing arrives twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_oldest_drains_a_slow_instance_before_the_next_starts() {
    let slow = Load {
        count: 600,
        per_message: Duration::from_millis(1),
        before_departure: 50,
    };
    let stopped_as = hand_over_on(Departure::Leave, slow).await;
    assert!(stopped_while_leaving(stopped_as), "{stopped_as:?}");
}

/// Coordinated shutdown of the oldest: the same, the instance stopping in
/// `cluster-exiting` at the latest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_of_the_oldest_stops_the_instance_before_it_is_removed() {
    let stopped_as = hand_over_on(Departure::Terminate, FAST).await;
    assert!(stopped_while_leaving(stopped_as), "{stopped_as:?}");
}

/// Three nodes: the oldest crashes (its actors stop and its remoting goes
/// silent, as a killed process): the instance moves only once the others'
/// resolver downed it and it is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_oldest_is_replaced_only_after_it_is_downed_and_removed() {
    let mut nodes = singleton_nodes();
    let members = start_nodes(&mut nodes, 3).await;
    let (clusters, probes) = form(&members);
    let probe = Arc::new(LiveProbe::default());
    let singletons = start_singletons(&members, &probe, &settings());
    let oldest = oldest_index(&clusters);
    await_cond_within(deadline(), "the instance starts", || {
        probe.starts().len() == 1
    });
    let survivor = (oldest + 1) % 3;
    singletons[survivor].proxy().tell(1);
    await_cond_within(deadline(), "the instance gets a message", || {
        probe.received() == 1
    });

    // Subscribed after the survivor's proxy (which has handled a message,
    // so it has subscribed): the event stream tells its subscribers in
    // order, so the proxy has the `UnreachableMember` in its mailbox
    // before this probe sees it.
    let late_events =
        volley_testkit::TestProbe::<ClusterEvent>::on_event_stream(&members[survivor].system);
    let gone = clusters[oldest].self_member().clone();
    members[oldest].remoting.shutdown();
    let crashed = members[oldest].system.clone();
    crashed.terminate().await;
    late_events.fish_for_within(deadline(), |event| match event {
        ClusterEvent::UnreachableMember { member } if member.unique_address() == gone => {
            FishingOutcome::Complete
        }
        _ => FishingOutcome::Continue,
    });
    // Sent to an unreachable instance: the proxy buffers it, and the next
    // instance gets it.
    singletons[survivor].proxy().tell(2);
    for (_, events) in probes.iter().enumerate().filter(|(i, _)| *i != oldest) {
        expect_removed(events, &gone, MemberStatus::Down);
    }
    probe.await_state("a new instance gets the buffered message", |s| {
        s.starts.len() == 2 && s.received.len() == 2
    });
    let state = probe.with(|s| std::mem::take(&mut *s));
    assert_eq!(state.most_live, 1, "{state:?}");
    assert!(
        !state.known_at_start[1].contains(&gone),
        "started before the crashed oldest was removed: {state:?}"
    );
    nodes.stop_all().await;
}

/// A proxy with no instance to send to (no member has the singleton's
/// role) keeps `buffer_size` messages and drops the oldest beyond,
/// counting each, and each as a dead letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_proxy_buffer_drops_the_oldest_and_counts_them() {
    let mut nodes = singleton_nodes();
    let members = start_nodes(&mut nodes, 1).await;
    let _formed = form(&members);
    let probe = Arc::new(LiveProbe::default());
    let mut settings = settings().with_role("nobody-has-it");
    settings.buffer_size = 10;
    let singleton = start_singletons(&members, &probe, &settings).remove(0);
    let dead = TestProbe::<DeadLetter>::on_event_stream(&members[0].system);
    for n in 1..=25 {
        singleton.proxy().tell(n);
    }
    await_cond_within(deadline(), "15 dropped", || singleton.dropped() == 15);
    for _ in 0..15 {
        let fished = dead.fish_for_within(deadline(), |l: &DeadLetter| {
            match l.reason == DeadLetterReason::BufferOverflow {
                true => FishingOutcome::Complete,
                false => FishingOutcome::Continue,
            }
        });
        let letter = fished.last().expect("the letter fished for");
        assert_eq!(letter.recipient, singleton.proxy().path().to_string());
    }
    assert!(probe.starts().is_empty());
    nodes.stop_all().await;
}
