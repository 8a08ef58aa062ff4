//! Addresses a peer claims (issue 29, item 1): a peer that is not dialed
//! back cannot make the node dial its claimed address by declaring refs
//! on it; the address check itself connects at most once per claimed
//! `host:port` per window, and is counted; an association started on a
//! peer's word whose address never answers is let go of soon, not after
//! the idle time; and failing connections of many associations warn a
//! few times, not once per lane.

use crate::common;
use crate::log_capture;
use crate::raw_peer;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::holding_relay::HoldingRelay;
use common::{ask_sum, metered, node, node_with, remote_ref, spawn_calculator, Calc, T};
use raw_peer::hostile::*;
use tokio::io::AsyncWriteExt;
use tracing::Level;
use volley_remote::wire::{Address, Lane};
use volley_remote::{AssociationState, RemoteSettings};
use volley_testkit::{DispatcherUnderTest, RecordedMetrics};

/// How long the outcome of an address check is remembered, during which
/// no other check connects to that `host:port` (wire-protocol §15).
const CHECK_WINDOW: Duration = Duration::from_secs(5);

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Issue 29: 120 handshakes claiming made-up names at three listeners
/// that never answer, each declaring a ref on its own claimed node and
/// asking the calculator to answer there. Before, the declaration made
/// the node associate with the claimed address (and its lanes redial it
/// for minutes); now every answer is a dead letter, no claimed address
/// gets an association or a failure detector, each listener sees at most
/// one check per window, and a real node still associates and asks.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_declared_on_spoofed_addresses_make_no_association() {
    const CLAIMS: usize = 120;
    let recorded = RecordedMetrics::install();
    // Counters are labelled by system name: each copy of the test has its own.
    let name = DispatcherUnderTest::name("spoofed-refs");
    let b = node_with(&name, metered(), RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let addr = b.remoting.address().clone();
    let calc = format!("{addr}/user/calc");
    let traps = [trap("t").await, trap("t").await, trap("t").await];
    let started = Instant::now();
    let before = b.system.dead_letter_count();
    let mut claims = Vec::new();
    let mut held = Vec::new();
    for i in 0..CLAIMS {
        let port = traps[i % traps.len()].address.port();
        let claimed: Address = format!("volley://spoof{i}@127.0.0.1:{port}")
            .parse()
            .unwrap();
        let mut s = handshake_as(&addr, Lane::Ordinary, &claimed).await;
        let own = format!("{claimed}/user/me");
        let mut out = declarations(&[&calc, &own]);
        out.extend_from_slice(&add_frame(1, 2));
        s.write_all(&out).await.unwrap();
        held.push(s);
        claims.push(claimed);
    }
    let associated = || {
        claims
            .iter()
            .filter(|c| b.remoting.association_state(c).is_some())
            .count()
    };
    // Each answer goes to the ref its claim declared on itself: a dead
    // letter, unless the declaration made the node associate there.
    wait_for("every answer dead-lettered, or an association", || {
        b.system.dead_letter_count() >= before + CLAIMS as u64 || associated() > 0
    })
    .await;
    assert_eq!(associated(), 0, "associations with spoofed addresses");
    assert!(
        claims.iter().all(|c| b.remoting.is_reachable(c).is_none()),
        "a claim that is not dialed back got a failure detector"
    );
    let dialed: usize = traps
        .iter()
        .map(|t| t.accepted.load(Ordering::SeqCst))
        .sum();
    let windows = 1 + (started.elapsed().as_secs() / CHECK_WINDOW.as_secs()) as usize;
    for t in &traps {
        let n = t.accepted.load(Ordering::SeqCst);
        assert!(n <= windows, "{n} check connections to one host:port");
    }
    // Every check connection is counted once it ends (the listeners never
    // answer: half the handshake timeout), and every claim left unchecked.
    let system = &format!("system={name}");
    let silent = format!("outcome=silent,{system}");
    wait_for("the checks counted", || {
        recorded.counter("volley_remote_address_checks_total", &silent) == Some(dialed as u64)
    })
    .await;
    let limited = recorded
        .counter("volley_remote_address_checks_limited_total", system)
        .unwrap();
    assert!(
        limited as usize >= CLAIMS - dialed,
        "{limited} claims limited, {dialed} checked, of {CLAIMS}"
    );
    let a = node("alpha", RemoteSettings::default()).await;
    assert_eq!(ask_sum(&remote_ref(&a, &b, "calc"), T).await.unwrap(), 42);
    assert_eq!(
        b.remoting.association_state(a.remoting.address()),
        Some(AssociationState::Active)
    );
    drop(held);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Issue 29: claims of one `host:port` under any name, within the window
/// of a check there, open no connection: the place answered as another
/// incarnation, and one answer settles every claim of it. Each check and
/// each claim the limit leaves unchecked is counted. After the window,
/// the place is checked again, once.
// One dispatcher kind: what this checks is the transport's timing (its
// connection attempts and timers), which no actor's scheduling touches,
// and it waits seconds of real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_check_connects_once_per_host_and_port_per_window() {
    let recorded = RecordedMetrics::install();
    let name = DispatcherUnderTest::name("checked-once");
    let b = node_with(&name, metered(), RemoteSettings::default()).await;
    let addr = b.remoting.address().clone();
    let place = impostor(99).await;
    let port = place.address.port();
    let claim =
        |name: &str| -> Address { format!("volley://{name}@127.0.0.1:{port}").parse().unwrap() };
    let count = |name: &str, labels: &str| recorded.counter(name, labels).unwrap_or(0);
    let refuted = || {
        count(
            "volley_remote_address_checks_total",
            &format!("outcome=refuted,system={name}"),
        )
    };
    let limited = || {
        count(
            "volley_remote_address_checks_limited_total",
            &format!("system={name}"),
        )
    };
    let mut held = vec![handshake_as(&addr, Lane::Control, &claim("ghost")).await];
    wait_for("the first claim checked", || refuted() == 1).await;
    let checked_at = Instant::now();
    for (n, name) in ["ghost", "other", "third", "ghost"].into_iter().enumerate() {
        held.push(handshake_as(&addr, Lane::Control, &claim(name)).await);
        wait_for("the claim left unchecked by the limit", || {
            limited() == n as u64 + 1
        })
        .await;
    }
    assert!(checked_at.elapsed() < CHECK_WINDOW, "too slow to judge");
    assert_eq!(place.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(refuted(), 1);
    // Time passing is what is tested: the window's end.
    tokio::time::sleep(
        CHECK_WINDOW.saturating_sub(checked_at.elapsed()) + Duration::from_millis(200),
    )
    .await;
    held.push(handshake_as(&addr, Lane::Control, &claim("other")).await);
    wait_for("the place checked again", || refuted() == 2).await;
    assert_eq!(place.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(limited(), 4);
    drop(held);
    b.system.terminate().await;
}

/// Issue 29: with `dial_declared_nodes`, an answer to a ref a peer
/// declared on a third node starts an association there on the peer's
/// word. The third node never answers a handshake: the association is
/// let go of after twice the handshake timeout, not kept for
/// `stop_idle_outbound_after` (5 min) with its lanes redialing.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_association_whose_address_never_answers_is_let_go_of_soon() {
    let mut settings = RemoteSettings::default();
    settings.trust.dial_declared_nodes = true;
    settings.handshake_timeout = Duration::from_millis(500);
    let b = node("unproven", settings).await;
    spawn_calculator(&b, "calc");
    let addr = b.remoting.address().clone();
    let third = trap("third").await;
    let me: Address = format!("volley://mallory@127.0.0.1:{}", closed_port())
        .parse()
        .unwrap();
    let mut s = handshake_as(&addr, Lane::Ordinary, &me).await;
    let calc = format!("{addr}/user/calc");
    let there = format!("{}/user/x", third.address);
    let mut out = declarations(&[&calc, &there]);
    out.extend_from_slice(&add_frame(1, 2));
    s.write_all(&out).await.unwrap();
    wait_for(
        "the answer starts an association with the third node",
        || b.remoting.association_state(&third.address).is_some(),
    )
    .await;
    // The declared ref goes with the connection's table.
    drop(s);
    wait_for("the association let go of", || {
        b.remoting.association_state(&third.address).is_none()
    })
    .await;
    let dialed = third.accepted.load(Ordering::SeqCst);
    // Time passing is what is tested: nothing redials the address.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(third.accepted.load(Ordering::SeqCst), dialed);
    b.system.terminate().await;
}

/// Issue 29: 60 associations whose three lanes all fail to connect warn a
/// few times a second in all, not once per lane (180 lines); the rest go
/// to debug.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_connections_of_many_associations_warn_a_few_times() {
    const NODES: usize = 60;
    log_capture::install();
    let a = node("warner", RemoteSettings::default()).await;
    let started = Instant::now();
    for i in 0..NODES {
        let path = format!("volley://unheard{i}@127.0.0.1:{}/user/calc", closed_port());
        let calc = a.remoting.resolve::<Calc>(&path).unwrap();
        calc.tell(Calc::Seq { from: 0, n: 0 });
    }
    let failures = |level: Option<Level>| {
        log_capture::events(|e| {
            e.text.contains("retrying in")
                && e.text.contains("volley://unheard")
                && level.is_none_or(|l| e.level == l)
        })
        .len()
    };
    wait_for("every lane's first failure reported", || {
        failures(None) >= NODES * 3
    })
    .await;
    let warnings = failures(Some(Level::WARN));
    let seconds = started.elapsed().as_secs() as usize + 2;
    assert!(
        warnings <= 10 * seconds,
        "{warnings} warnings in {seconds} s about failed connections"
    );
    a.system.terminate().await;
}

/// A node whose address did not answer the check when it dialed in (it
/// was paused, or its TLS handshake was slow) is dialed back once it
/// answers a later check, made while it keeps heartbeating. Before, the
/// check ran once, at the handshake: the node was never dialed back, got
/// no heartbeats, acks or replies, and gave this one up for good.
// One dispatcher kind: what this checks is the transport's timing (its
// connection attempts and timers), which no actor's scheduling touches,
// and it waits seconds of real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_did_not_answer_in_time_is_checked_again_while_its_node_heartbeats() {
    let recorded = RecordedMetrics::install();
    let name = DispatcherUnderTest::name("late-check");
    // The check waits half the handshake timeout for an answer.
    let b_settings = RemoteSettings {
        handshake_timeout: Duration::from_millis(1000),
        ..RemoteSettings::default()
    };
    let b = node_with(&name, metered(), b_settings).await;
    spawn_calculator(&b, "calc");
    // A is known by its relay's port, and the relay holds everything for
    // now: B's check of A's address gets no answer.
    let port = common::free_port();
    let relay = HoldingRelay::start(port).await;
    relay.hold(true, true);
    let a_settings = RemoteSettings {
        port,
        canonical_port: Some(relay.port),
        ..common::quick_heartbeats()
    };
    let a = node("late-check-a", a_settings).await;
    let a_address = a.remoting.address().clone();
    let calc = remote_ref(&a, &b, "calc");
    calc.tell(Calc::Seq { from: 0, n: 0 });
    let silent = format!("outcome=silent,system={name}");
    common::eventually("B's first check of A's address to find no answer", || {
        recorded.counter("volley_remote_address_checks_total", &silent) == Some(1)
    })
    .await;
    assert_eq!(b.remoting.association_state(&a_address), None);
    relay.heal();
    // The next check is due once the first one's outcome is a window old.
    volley_testkit::eventually_within(CHECK_WINDOW + T, "B to dial A back", || {
        b.remoting.association_state(&a_address) == Some(AssociationState::Active)
    })
    .await;
    assert_eq!(ask_sum(&calc, T).await.ok(), Some(42), "B answers A");
    common::eventually("A to hear B's heartbeats", || {
        a.remoting.is_reachable(b.remoting.address()) == Some(true)
    })
    .await;
    a.system.terminate().await;
    b.system.terminate().await;
}
