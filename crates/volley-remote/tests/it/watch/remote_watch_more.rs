//! Cases of Apache Pekko's remoting suites, carried over to volley where
//! `control/remote_watch.rs`, `quarantine.rs`, `hostile_trust.rs` and `reconnect.rs`
//! did not cover them yet:
//!
//! - artery `RemoteDeathWatchSpec` (and classic): Terminated for a node
//!   that is not running, with no quarantine of an incarnation never met;
//!   Terminated for an unknown host, and an ask to it failing; a watch
//!   withdrawn before the node ever answered brings nothing.
//! - `RemoteWatcherSpec`: several watchers and a partial unwatch ("correct
//!   interaction when watching"); a node given up, back as a new
//!   incarnation and given up again ("AddressTerminated for new watch after
//!   broken connection that was re-established and broken again").
//! - `HandshakeFailureSpec`: "allow for timeout and later connect".
//! - `UntrustedSpec`: no selection of a child of a listed path, nor by
//!   wildcard; a watch of an unlisted actor does not take; what volley lets
//!   through that Pekko does not (watches of listed actors) and the
//!   replies to the untrusted node's own asks.
//!
//! Not carried over: `DuplicateHandshakeSpec` (a stage copying Artery's
//! handshake to every inbound lane; each volley lane shakes hands itself)
//! and `HarmlessQuarantineSpec` (volley has no harmless quarantine and no
//! public way to quarantine by hand).

use crate::common;
use crate::log_capture;

use std::time::{Duration, Instant};

use common::{
    add, events_so_far, free_port, node, on_port, quick_detector, record_events, remote_ref,
    spawn_calculator, Calc, Calculator, Node, T,
};
use volley::{Actor, AskError, Context, HandleResult, Props};
use volley_remote::{DisassociationReason, RemotingEvent};
use volley_testkit::TestProbe;

/// Long enough for a stray duplicate or a wrongly delivered notice to
/// arrive; the detector's bound here is about half a second.
const QUIET: Duration = Duration::from_millis(1500);

/// Waits until `done` holds, failing after `limit`.
async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Asks until `calc` answers 1 + 1, failing after `limit`.
async fn until_answered(calc: &volley::ActorRef<Calc>, limit: Duration) {
    let start = Instant::now();
    loop {
        let answer = calc
            .ask(
                |reply_to| Calc::Add {
                    a: 1,
                    b: 1,
                    reply_to,
                },
                Duration::from_millis(500),
            )
            .await;
        if answer == Ok(2) {
            return;
        }
        assert!(start.elapsed() < limit, "never answered: {answer:?}");
    }
}

fn quarantines(events: &[RemotingEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, RemotingEvent::Quarantined { .. }))
        .count()
}

/// RemoteDeathWatchSpec, "receive Terminated when system of de-serialized
/// ActorRef is not running": the watcher is told, and an incarnation this
/// node never met is not quarantined (no uid to quarantine).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_an_actor_of_a_node_that_is_not_running_gives_terminated_and_no_quarantine() {
    let a = node("rdw-a", quick_detector()).await;
    let events = record_events(&a);
    let port = free_port();
    let gone = a
        .remoting
        .resolve::<Calc>(&format!("volley://other@127.0.0.1:{port}/user/foo/bar"))
        .unwrap();
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&gone);
    probe.expect_terminated_within(T, &gone);
    probe.expect_no_msg(QUIET);
    let events = events_so_far(&events);
    assert!(
        events.iter().any(|e| matches!(
            e,
            RemotingEvent::AddressTerminated {
                uid: None,
                reason: DisassociationReason::Unreachable,
                ..
            }
        )),
        "{events:?}"
    );
    assert_eq!(quarantines(&events), 0, "{events:?}");
    a.system.terminate().await;
}

/// RemoteDeathWatchSpec, "receive Terminated when watched node is unknown
/// host" and "receive ActorIdentity(None) when identified node is unknown
/// host": volley's answer to the second is an ask that fails, at once once
/// the node is known down.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_an_actor_on_an_unknown_host_gives_terminated_and_asks_to_it_fail() {
    let a = node("rdw-a", quick_detector()).await;
    let path = "volley://rdw-a@unknownhost.invalid:7355/user/subject";
    let subject = a.remoting.resolve::<Calc>(path).unwrap();
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&subject);
    let t = probe.expect_terminated_within(T, &subject);
    assert_eq!(t.actor.path().to_string(), path);
    assert!(subject.is_terminated(), "its node is known down");
    let err = subject
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 1,
                reply_to,
            },
            T,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, AskError::RecipientTerminated(_)), "{err:?}");
    a.system.terminate().await;
}

/// Classic RemoteDeathWatchSpec, "quarantine systems after unsuccessful
/// system message delivery if have not communicated before": a watch and
/// its unwatch, both still undelivered, to a node that never answers. The
/// watcher hears nothing, even after the node is given up, and nothing is
/// quarantined.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_withdrawn_before_the_node_ever_answered_brings_nothing() {
    let a = node("rdw-a", quick_detector()).await;
    let events = record_events(&a);
    let port = free_port();
    let extinct_node = format!("volley://extinct@127.0.0.1:{port}");
    let noone = a
        .remoting
        .resolve::<Calc>(&format!("{extinct_node}/user/noone"))
        .unwrap();
    let probe = TestProbe::<u32>::new(&a.system);
    probe.watch(&noone);
    probe.unwatch(&noone);
    let extinct_node = extinct_node.parse().unwrap();
    wait_until(T, "the node given up", || {
        a.remoting.is_reachable(&extinct_node) == Some(false)
    })
    .await;
    probe.expect_no_msg(QUIET);
    assert_eq!(quarantines(&events_so_far(&events)), 0);
    a.system.terminate().await;
}

/// RemoteWatcherSpec, "have correct interaction when watching", seen from
/// the watchers: two watchers of one remote actor are each told once, one
/// of them also watching another actor it then unwatches, which it is not
/// told about.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_watcher_is_told_once_and_an_unwatched_actor_not_at_all() {
    let a = node("rw-a", quick_detector()).await;
    let b = node("rw-b", quick_detector()).await;
    let b1 = spawn_calculator(&b, "b1");
    let b2 = spawn_calculator(&b, "b2");
    let (r1, r2) = (remote_ref(&a, &b, "b1"), remote_ref(&a, &b, "b2"));
    assert_eq!(add(&r1, 1, 1).await, 2);
    assert_eq!(add(&r2, 1, 1).await, 2);
    let a1 = TestProbe::<u32>::new(&a.system);
    let a2 = TestProbe::<u32>::new(&a.system);
    a1.watch(&r1);
    a1.watch(&r2);
    a2.watch(&r2);
    a1.unwatch(&r1);
    // The unwatch travels behind the watch on the control lane; an ask
    // that crossed the same way after it does not prove it was applied,
    // so leave it time before the stop.
    a1.expect_no_msg(Duration::from_millis(300));
    b1.graceful_stop();
    wait_until(T, "b1 stopped", || b1.is_terminated()).await;
    b2.graceful_stop();
    // A Terminated of b1 would come first: the probe panics on it.
    a1.expect_terminated_within(T, &r2);
    a2.expect_terminated_within(T, &r2);
    a1.expect_no_msg(QUIET);
    a2.expect_no_msg(Duration::from_millis(100));
    a.system.terminate().await;
    b.system.terminate().await;
}

/// RemoteWatcherSpec, "generate AddressTerminated for new watch after
/// broken connection that was re-established and broken again": the node
/// is given up, comes back as a new incarnation on the same port, is
/// watched again and reachable, then given up again, and the new watch
/// ends too.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_given_up_then_back_is_watched_afresh_and_given_up_again() {
    let port = free_port();
    let a = node("rw-a", quick_detector()).await;
    let events = record_events(&a);
    let probe = TestProbe::<u32>::new(&a.system);

    let first = node("rw-b", on_port(port)).await;
    spawn_calculator(&first, "b6");
    let b6 = remote_ref(&a, &first, "b6");
    assert_eq!(add(&b6, 1, 2).await, 3);
    probe.watch(&b6);
    probe.expect_no_msg(Duration::from_millis(300));
    let (address, first_uid) = (first.remoting.address().clone(), first.remoting.uid());
    first.remoting.shutdown();
    probe.expect_terminated_within(T, &b6);
    first.system.terminate().await;

    let second = node("rw-b", on_port(port)).await;
    spawn_calculator(&second, "c6");
    let c6 = remote_ref(&a, &second, "c6");
    until_answered(&c6, T).await;
    probe.watch(&c6);
    // Heartbeats flow: no verdict, no notice, for several detector bounds.
    probe.expect_no_msg(QUIET);
    assert_eq!(a.remoting.is_reachable(&address), Some(true));
    let second_uid = second.remoting.uid();
    second.remoting.shutdown();
    probe.expect_terminated_within(T, &c6);
    probe.expect_no_msg(Duration::from_millis(300));

    let events = events_so_far(&events);
    for uid in [first_uid, second_uid] {
        let ended = events
            .iter()
            .filter(
                |e| matches!(e, RemotingEvent::AddressTerminated { uid: Some(u), .. } if *u == uid),
            )
            .count();
        assert_eq!(ended, 1, "incarnation {uid}: {events:?}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, RemotingEvent::Quarantined { uid: u, .. } if *u == uid)),
            "incarnation {uid}: {events:?}"
        );
    }
    a.system.terminate().await;
    second.system.terminate().await;
}

/// HandshakeFailureSpec, "allow for timeout and later connect": messages
/// to a node that is not there are lost, and once it has been given up
/// for silence and then starts, both the old ref and a new one reach it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_was_not_there_at_first_is_reached_once_it_starts() {
    let port = free_port();
    let a = node("hs-a", quick_detector()).await;
    let events = record_events(&a);
    let address: volley_remote::wire::Address =
        format!("volley://hs-b@127.0.0.1:{port}").parse().unwrap();
    let echo = a
        .remoting
        .resolve::<Calc>(&format!("{address}/user/echo"))
        .unwrap();
    let early = echo
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 1,
                reply_to,
            },
            Duration::from_millis(300),
        )
        .await;
    assert!(early.is_err(), "{early:?}");
    wait_until(T, "the absent node given up", || {
        a.remoting.is_reachable(&address) == Some(false)
    })
    .await;

    let b = node("hs-b", on_port(port)).await;
    spawn_calculator(&b, "echo");
    until_answered(&echo, T).await;
    until_answered(&remote_ref(&a, &b, "echo"), T).await;
    let events = events_so_far(&events);
    assert!(
        events.contains(&RemotingEvent::Associated {
            remote: address.clone(),
            uid: b.remoting.uid()
        }),
        "{events:?}"
    );
    assert_eq!(
        quarantines(&events),
        0,
        "nothing was met to quarantine: {events:?}"
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A listed actor with a child, for the untrusted-mode cases.
struct Receptionist;

impl Actor for Receptionist {
    type Msg = Calc;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.spawn("child1", Props::new(Calculator::default))
            .map_err(|e| e.to_string())?;
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Calc) -> HandleResult {
        if let Calc::Add { a, b, reply_to } = msg {
            reply_to.tell(a + b);
        }
        Ok(())
    }
}

/// A node in untrusted mode with `/user/receptionist` listed, its child
/// `child1`, and an unlisted `/user/other`; and a node that talks to it,
/// listed in `known_peers` (in untrusted mode no other node is dialed
/// back, so nothing could answer it).
async fn untrusted_pair() -> (Node, Node) {
    let client = node("untrusted-client", quick_detector()).await;
    let mut settings = quick_detector();
    settings.trust.untrusted_mode = true;
    settings.trust.trusted_paths = vec!["/user/receptionist".into()];
    settings.trust.known_peers = vec![client.remoting.address().to_string()];
    let server = node("untrusted-server", settings).await;
    server
        .system
        .spawn("receptionist", Props::new(|| Receptionist))
        .unwrap();
    spawn_calculator(&server, "other");
    (server, client)
}

/// Waits for the server's log line refusing `path`.
async fn refusal_logged(path: &str) {
    let what = format!("{path} is not among trust.trusted_paths");
    wait_until(T, &what, || {
        !log_capture::events(|e| e.text.contains("refused") && e.text.contains(&what)).is_empty()
    })
    .await;
}

/// UntrustedSpec, "allow actor selection to configured allow list",
/// "discard actor selection to child of matching allow list", "discard
/// actor selection with wildcard" and "discard watch messages": listed
/// paths match exactly, and a watch of an unlisted actor does not take
/// (volley reports the actor terminated at once instead of staying
/// silent, and nothing more when it really stops).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_mode_matches_listed_paths_exactly_and_refuses_watches_of_others() {
    log_capture::install();
    let (server, client) = untrusted_pair().await;
    let receptionist = remote_ref(&client, &server, "receptionist");
    assert_eq!(add(&receptionist, 2, 3).await, 5);
    assert!(server
        .system
        .lookup("/user/receptionist/child1")
        .unwrap()
        .is_some());

    for path in ["receptionist/child1", "*", "receptionist/*"] {
        let sel = remote_ref(&client, &server, path);
        let sent = sel
            .ask(
                |reply_to| Calc::Add {
                    a: 1,
                    b: 1,
                    reply_to,
                },
                Duration::from_millis(800),
            )
            .await;
        assert!(
            matches!(sent, Err(AskError::Timeout { .. })),
            "{path}: {sent:?}"
        );
        refusal_logged(&format!("/user/{path}")).await;
    }

    // Pekko drops such a watch and the watcher hears nothing, ever; volley
    // refuses the ref and answers the watch with Terminated at once (as
    // for an actor that is not there), while the actor lives on.
    let other = remote_ref(&client, &server, "other");
    let probe = TestProbe::<u32>::new(&client.system);
    probe.watch(&other);
    probe.expect_terminated_within(T, &other);
    refusal_logged("/user/other").await;
    let local_other = server.system.lookup("/user/other").unwrap().unwrap();
    assert!(!local_other.is_terminated(), "the watch stopped nothing");
    server.system.stop(&local_other);
    wait_until(T, "other stopped", || local_other.is_terminated()).await;
    probe.expect_no_msg(QUIET);
    client.system.terminate().await;
    server.system.terminate().await;
}

/// Where volley's untrusted mode lets more through than Pekko's
/// ("discard watch messages" applies only to unlisted actors here), and
/// the answers to the untrusted node's own asks, which are no listed path.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_mode_accepts_watches_of_listed_actors_and_answers_to_its_own_asks() {
    let (server, client) = untrusted_pair().await;
    spawn_calculator(&client, "calc");
    let calc = remote_ref(&server, &client, "calc");
    assert_eq!(
        add(&calc, 20, 22).await,
        42,
        "the reply reached the untrusted node"
    );

    let receptionist = remote_ref(&client, &server, "receptionist");
    assert_eq!(add(&receptionist, 1, 1).await, 2);
    let probe = TestProbe::<u32>::new(&client.system);
    probe.watch(&receptionist);
    probe.expect_no_msg(Duration::from_millis(300));
    let local = server.system.lookup("/user/receptionist").unwrap().unwrap();
    server.system.stop(&local);
    probe.expect_terminated_within(T, &receptionist);
    client.system.terminate().await;
    server.system.terminate().await;
}
