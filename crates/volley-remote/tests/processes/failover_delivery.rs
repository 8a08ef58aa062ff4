//! Remote failure handling against a peer in a second OS process, part
//! two: what becomes of messages when the peer dies and comes back, a
//! graceful leave after a burst of tells, and a job whose workers live on
//! the peer. (Part one, `failover_processes.rs`: kill, restart, stalls.)
//! The time bounds are generous limits for a loaded machine, not speed
//! targets.
//!
//! Each test has two processes with their own thread pools on the
//! machine. None holds a peer to a time bound, and the log lines they
//! count name their own peer, so they may share the machine with one more
//! test (`peer_process::shared`).

use crate::common;
use crate::log_capture;
use crate::peer_process;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::T;
use peer_process::{
    associated, bounded, by_path, detection_bound, free_port, parent, record_events, sink_report,
    wait_until, Bulk, JobMsg, Load, Peer, PeerConfig, Seen, Work, INTERVAL_MS, LARGE, LIMIT, NEVER,
    PAUSE_MS,
};
use volley::{Actor, ActorRef, Context, HandleResult, Props, Router, RouterRef, Terminated};
use volley_remote::wire::Address;
use volley_remote::DisassociationReason;

/// Waits until both of `node`'s message lanes to `remote` have noticed a
/// closed connection (more than `before` such notices), so that nothing
/// sent afterwards goes into a socket whose peer is gone: bytes the kernel
/// accepted there would be lost without a count.
async fn lanes_noticed_the_loss(remote: &Address, before: usize) {
    let remote = format!("remote={remote}");
    wait_until(T, "both lanes to notice the lost connection", || {
        let lost = lost_connections(&remote);
        ["lane=Ordinary", "lane=Large"]
            .iter()
            .all(|lane| lost.iter().filter(|e| e.contains(lane)).count() > before)
    })
    .await;
}

fn lost_connections(remote: &str) -> Vec<String> {
    log_capture::events(|e| e.text.starts_with("connection lost") && e.text.contains(remote))
        .into_iter()
        .map(|e| e.text)
        .collect()
}

/// Sends `small` small and `big` large messages; how many in all.
fn send_load(sink: &ActorRef<Load>, next: &mut u64, small: u64, big: u64) -> u64 {
    for _ in 0..small {
        sink.tell(Load::Small { n: *next });
        *next += 1;
    }
    for _ in 0..big {
        sink.tell(Load::Big(Bulk(vec![1; LARGE])));
    }
    small + big
}

/// The peer dies (SIGKILL) and a new incarnation starts on the same port:
/// of everything sent from the moment the loss was noticed, small and
/// large messages, each one either reaches the new incarnation or is
/// counted as a dead letter here.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_the_peer_is_down_are_delivered_or_counted() {
    let _turn = peer_process::shared().await;
    log_capture::install();
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let events = record_events(&a.system);
        let mut config = PeerConfig::new(INTERVAL_MS, PAUSE_MS);
        config.port = free_port();
        let mut first = Peer::start(&config).await;
        let address = first.address.clone();
        let sink = by_path(&a, &address, "sink");
        let mut n = 0;

        // The first incarnation gets everything sent to it, so nothing is
        // in flight when it dies (and both lanes are connected).
        send_load(&sink, &mut n, 200, 5);
        let deadline = Instant::now() + T;
        while first.report().await[..2] != [200, 5] {
            assert!(Instant::now() < deadline, "the first load did not arrive");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let noticed = lost_connections(&format!("remote={address}"));
        let before = ["lane=Ordinary", "lane=Large"]
            .iter()
            .map(|lane| noticed.iter().filter(|e| e.contains(lane)).count())
            .max()
            .unwrap_or(0);
        first.kill();
        lanes_noticed_the_loss(&address, before).await;
        let dead_before = a.system.dead_letter_count();

        // While the node is down, before and after the detector's verdict.
        let mut sent = send_load(&sink, &mut n, 1000, 5);
        let first_uid = first.uid;
        wait_until(T, "the detector's verdict on the dead incarnation", || {
            events.values().iter().any(|e| {
                matches!(
                    e,
                    volley_remote::RemotingEvent::AddressTerminated { remote, uid: Some(uid), .. }
                        if *remote == address && *uid == first_uid
                )
            })
        })
        .await;
        sent += send_load(&sink, &mut n, 1000, 5);
        // While the new incarnation starts, and once this node has found it.
        let mut second = Peer::start(&config).await;
        sent += send_load(&sink, &mut n, 500, 5);
        associated(&events, &address, second.uid).await;
        let last = send_load(&sink, &mut n, 500, 5);
        sent += last;

        let deadline = Instant::now() + Duration::from_secs(30);
        let accounted = loop {
            let report = second.report().await;
            let dead = a.system.dead_letter_count() - dead_before;
            let accounted = report[0] + report[1] + dead;
            if accounted >= sent {
                break accounted;
            }
            assert!(
                Instant::now() < deadline,
                "{} small and {} large arrived, {dead} dead letters, of {sent} sent",
                report[0],
                report[1]
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(accounted, sent, "a message was both delivered and counted");
        let report = second.report().await;
        assert!(
            report[0] + report[1] >= last,
            "the new incarnation got {report:?}, less than what was sent after it associated"
        );
        // Nothing more arrives or is counted: a window for a message
        // delivered and counted both to show.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let report = second.report().await;
        assert_eq!(
            report[0] + report[1] + a.system.dead_letter_count() - dead_before,
            sent,
            "still"
        );
        assert_eq!(
            second.dead_letters().await,
            Vec::<String>::new(),
            "every message found the sink"
        );
        a.system.terminate().await;
    })
    .await;
}

/// What a peer saw of this node's `terminate()` right after 1,000 tells.
struct Leave {
    /// This node's address, as the peer's event lines name it.
    me: Address,
    /// The peer's `Disassociated` events about this node, in order.
    disassociated: Vec<String>,
    /// The sink's `[small, big, out of order]` when the peer handled the
    /// `Shutdown` event: what had been delivered by then.
    at_shutdown: Vec<u64>,
    /// The sink's counts once everything settled.
    settled: Vec<u64>,
    /// The peer's events about this node other than `Associated` and
    /// `Disassociated`.
    others: Vec<String>,
    /// The peer's warnings about frames cut part-way or malformed.
    cut: Vec<String>,
    dead_letters_here: u64,
}

async fn leave_after_1000_tells() -> Leave {
    let a = parent(INTERVAL_MS, PAUSE_MS).await;
    let me = a.remoting.address().clone();
    let mut peer = Peer::start(&PeerConfig::new(INTERVAL_MS, PAUSE_MS)).await;
    let sink = by_path(&a, &peer.address, "sink");
    assert_eq!(sink_report(&sink).await, vec![0, 0, 0]);

    for n in 0..1000 {
        sink.tell(Load::Small { n });
    }
    a.system.terminate().await;
    let at_shutdown = peer.line("AT_SHUTDOWN ", T).await;
    // Room for late events and deliveries: the checks are on what comes
    // after the goodbye too (a second disassociation, a cut frame), so
    // time passing is part of them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = peer.report().await[..3].to_vec();
    let about_me = format!(" {me} ");
    let mine = |e: &&String| e.contains(&about_me);
    let disassociated = peer
        .events()
        .iter()
        .filter(mine)
        .filter_map(|e| e.strip_prefix("Disassociated "))
        .map(str::to_string)
        .collect();
    let others = peer
        .events()
        .iter()
        .filter(mine)
        .filter(|e| !e.starts_with("Associated ") && !e.starts_with("Disassociated "))
        .cloned()
        .collect();
    let cut = peer
        .warnings()
        .await
        .into_iter()
        .filter(|w| w.contains("inside a frame") || w.contains("protocol error"))
        .collect();
    peer.quit().await;
    Leave {
        me,
        disassociated,
        at_shutdown: at_shutdown.split(' ').map(|n| n.parse().unwrap()).collect(),
        settled,
        others,
        cut,
        dead_letters_here: a.system.dead_letter_count(),
    }
}

/// `terminate()` right after 1,000 tells: the peer gets all of them, in
/// order, learns that this node shut down (`Disassociated` with reason
/// `Shutdown`, no quarantine), and reads no frame cut part-way.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_after_1000_tells_flushes_them_and_says_goodbye() {
    let _turn = peer_process::shared().await;
    bounded(LIMIT, async {
        let leave = leave_after_1000_tells().await;
        assert_eq!(leave.dead_letters_here, 0, "the flush dropped tells");
        assert_eq!(leave.settled, vec![1000, 0, 0], "small, big, out of order");
        let shutdown = format!("{} reason={}", leave.me, DisassociationReason::Shutdown);
        assert!(
            leave.disassociated.contains(&shutdown),
            "{:?}",
            leave.disassociated
        );
        assert!(
            leave
                .others
                .iter()
                .all(|e| e.starts_with("AddressTerminated ")),
            "{:?}",
            leave.others
        );
        assert!(leave.cut.is_empty(), "{:#?}", leave.cut);
    })
    .await;
}

/// A leave is one disassociation, `Shutdown`: the connections the peer
/// then drops itself are no second one.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_is_one_disassociation() {
    let _turn = peer_process::shared().await;
    bounded(LIMIT, async {
        for _ in 0..5 {
            let leave = leave_after_1000_tells().await;
            let shutdown = format!("{} reason={}", leave.me, DisassociationReason::Shutdown);
            assert_eq!(leave.disassociated, vec![shutdown]);
        }
    })
    .await;
}

/// The peer learns of the leave after it has got what the leaving node
/// flushed: when it handles `Disassociated(Shutdown)`, all 1,000 tells
/// are in the sink's mailbox.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_goodbye_comes_after_the_flushed_tells() {
    let _turn = peer_process::shared().await;
    bounded(LIMIT, async {
        for _ in 0..5 {
            let leave = leave_after_1000_tells().await;
            assert_eq!(
                leave.at_shutdown,
                vec![1000, 0, 0],
                "delivered when the shutdown was seen: small, big, out of order"
            );
        }
    })
    .await;
}

/// A master whose workers were spawned on the peer: it watches them.
struct Master {
    workers: Vec<ActorRef<Work>>,
    router: Option<RouterRef<Work>>,
    pending: HashSet<u32>,
    total: u64,
    reply_to: Option<ActorRef<Result<u64, String>>>,
    done: Arc<AtomicU64>,
    lost: Seen<String>,
}

impl Actor for Master {
    type Msg = JobMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        for w in &self.workers {
            ctx.watch(w);
        }
        self.router = Some(Router::group(self.workers.clone()).spawn_child(ctx, "workers")?);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: JobMsg) -> HandleResult {
        match msg {
            JobMsg::Run { tasks, reply_to } => {
                self.reply_to = Some(reply_to);
                let router = self.router.as_ref().expect("started");
                for (id, input) in tasks {
                    self.pending.insert(id);
                    router.tell(Work {
                        id,
                        input,
                        reply_to: ctx.myself(),
                    });
                }
            }
            JobMsg::Done { id, result } => {
                if self.pending.remove(&id) {
                    self.total += result;
                    self.done.fetch_add(1, Ordering::Relaxed);
                    if self.pending.is_empty() {
                        if let Some(to) = self.reply_to.take() {
                            to.tell(Ok(self.total));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.lost.push(t.actor.path().to_string());
        if let Some(to) = self.reply_to.take() {
            to.tell(Err(format!(
                "job aborted: worker {} terminated with {} tasks left",
                t.actor.path(),
                self.pending.len()
            )));
        }
        Ok(())
    }
}

/// "Watch the routees" across nodes: the workers behind a master's router
/// were spawned on the peer; killing the peer mid-job aborts the job with
/// a failure naming a worker, instead of leaving it waiting forever, and
/// the master learns of every worker's death.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_on_remote_workers_aborts_when_their_node_dies() {
    const WORKERS: usize = 4;
    let _turn = peer_process::shared().await;
    bounded(LIMIT, async {
        let a = parent(INTERVAL_MS, PAUSE_MS).await;
        let mut peer = Peer::start(&PeerConfig::new(INTERVAL_MS, PAUSE_MS)).await;
        let mut workers = Vec::new();
        for i in 0..WORKERS {
            let w: ActorRef<Work> = a
                .remoting
                .spawn_remote(&peer.address, "worker", Some(&format!("worker{i}")), &(), T)
                .await
                .unwrap();
            workers.push(w);
        }
        let done = Arc::new(AtomicU64::new(0));
        let lost = Seen::default();
        let master = {
            let (workers, done, lost) = (workers.clone(), done.clone(), lost.clone());
            a.system
                .spawn(
                    "master",
                    Props::new(move || Master {
                        workers: workers.clone(),
                        router: None,
                        pending: HashSet::new(),
                        total: 0,
                        reply_to: None,
                        done: done.clone(),
                        lost: lost.clone(),
                    }),
                )
                .unwrap()
        };
        // Twelve tasks; the last two are never answered, so the job is
        // still running when the node dies.
        let tasks: Vec<(u32, u64)> = (0..12u32)
            .map(|id| (id, if id >= 10 { NEVER } else { u64::from(id) }))
            .collect();
        let outcome = tokio::spawn(async move {
            master
                .ask(|reply_to| JobMsg::Run { tasks, reply_to }, LIMIT)
                .await
        });
        wait_until(T, "the answerable tasks", || {
            done.load(Ordering::Relaxed) == 10
        })
        .await;
        // The job must not end while tasks are pending: a window for it to.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!outcome.is_finished(), "the job ended with tasks pending");

        peer.kill();
        let bound = detection_bound(INTERVAL_MS, PAUSE_MS);
        let outcome = tokio::time::timeout(bound, outcome)
            .await
            .expect("the job hangs after its workers' node died")
            .unwrap()
            .expect("the master answers");
        let error = outcome.expect_err("the job cannot have succeeded");
        assert!(
            error.contains("job aborted") && error.contains(&peer.address.to_string()),
            "{error}"
        );
        wait_until(bound, "Terminated for every worker", || {
            lost.len() == WORKERS
        })
        .await;
        // A window for a duplicate Terminated.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut lost = lost.values();
        lost.sort();
        let mut expected: Vec<String> = workers.iter().map(|w| w.path().to_string()).collect();
        expected.sort();
        assert_eq!(lost, expected, "one Terminated per worker");
        a.system.terminate().await;
    })
    .await;
}
