//! Cases of Apache Pekko's remoting suites about a node's start and end,
//! carried over to volley (the facts they check, with volley's API):
//!
//! - `artery.ArteryTransportShutdownSpec`, "proceed with transport shutdown
//!   when stream completion times out": a peer that took the connections
//!   and stopped reading, with megabytes queued for it, does not hold
//!   `terminate` up past the flush deadline; every connection is closed,
//!   and a later `Remoting::shutdown` is harmless:
//!   `a_peer_that_stopped_reading_does_not_hold_up_terminate`. (Its
//!   "scheduler unavailable" twin has no counterpart: volley's deadline is
//!   a timer of the node's own runtime.)
//! - `DaemonicSpec`, "shut down correctly after getting connection
//!   refused": a node whose lanes keep failing to connect to a port where
//!   nobody listens terminates, and stops trying: the port, listened on
//!   after the end, gets no connection:
//!   `a_node_retrying_a_refused_connection_terminates_and_stops_retrying`.
//! - `artery.ActorRefResolveCacheQuarantineSpec`, "not use cached
//!   quarantined association" (Pekko issue 29828): a node asks an actor,
//!   leaves, and a new incarnation on the same address asks again: its ask
//!   is answered, whether the first one left with `terminate` or was
//!   quarantined for its silence:
//!   `a_restarted_asker_is_answered_after_a_clean_leave` and
//!   `a_restarted_asker_is_answered_after_its_first_incarnation_was_quarantined`.
//! - Artery's flush on shutdown (what is queued is written before the
//!   transport stops), with a lane whose first connection failed and
//!   whose node still answers on its control lane: the leave waits for
//!   the redial and writes what was queued:
//!   `a_leaving_node_waits_for_a_lane_redialing_a_node_that_answers`.
//!
//! Skipped, with the reason:
//! - `artery.HandshakeRetrySpec` ("be retried during handshake-timeout, no
//!   message loss"): covered by
//!   `pekko_artery.rs::a_node_that_starts_late_is_reached_both_ways`.
//! - `artery.HandshakeDenySpec` ("be denied when originating address is
//!   unknown": the node is named by a host other than its own): the same
//!   refusal (`WrongAddress`, the handshake's `to` is not the node's
//!   address) as a wrong system name, covered by
//!   `pekko_remoting.rs::a_wrong_system_name_at_a_live_nodes_address_is_given_up_and_counted`.
//! - `artery.DuplicateHandshakeSpec`, `artery.HarmlessQuarantineSpec`: see
//!   `pekko_remote_watch.rs`.

use crate::common;
use crate::log_capture;
use crate::raw_peer;

use std::time::{Duration, Instant};

use bytes::BytesMut;
use common::{ask_sum, free_port, node, on_port, quick_detector, record_events, spawn_calculator};
use common::{Calc, Node, T};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use volley_remote::wire::{Address, Decoder, DecoderConfig, Lane, Pdu};
use volley_remote::{RemoteSettings, RemotingEvent};

/// Asks `calc` with short timeouts until one answer comes, within [`T`].
async fn until_answered(n: &Node, calc_node: &Node, name: &str) {
    let calc = common::remote_ref(n, calc_node, name);
    let start = Instant::now();
    while ask_sum(&calc, Duration::from_millis(500)).await.is_err() {
        assert!(start.elapsed() < T, "no answer from {}", calc.path());
    }
}

/// Takes every connection to `listener` as the node `me`, answers its
/// handshake, and then never reads from it; the streams are handed to the
/// test through the channel, to be read once the node is gone.
fn stalled_acceptor(
    listener: TcpListener,
    me: Address,
) -> tokio::sync::mpsc::UnboundedReceiver<TcpStream> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let me = me.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                raw_peer::answer_handshake(&mut s, &me).await;
                let _ = tx.send(s);
            });
        }
    });
    rx
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_stopped_reading_does_not_hold_up_terminate() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let me: Address = format!("volley://stalled@127.0.0.1:{port}")
        .parse()
        .unwrap();
    let mut accepted = stalled_acceptor(listener, me.clone());

    let a = node(
        "stall-a",
        RemoteSettings {
            shutdown_flush_timeout: Duration::from_millis(300),
            ..RemoteSettings::default()
        },
    )
    .await;
    let sink = a
        .remoting
        .resolve::<Calc>(&format!("{me}/user/sink"))
        .unwrap();
    let (reply_to, _replies) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let reply_to = a
        .system
        .spawn(
            "replies",
            volley::Props::new(move || common::Relay(reply_to.clone())),
        )
        .unwrap();
    // More than the socket buffers hold, on the ordinary lane (frames under
    // the 64 KiB threshold) and on the large lane; what is over the lanes'
    // bounds is counted as dead letters at once.
    for _ in 0..300 {
        sink.tell(Calc::Blob(vec![7; 60 * 1024], reply_to.clone()));
    }
    for _ in 0..12 {
        sink.tell(Calc::Blob(vec![7; 2 << 20], reply_to.clone()));
    }
    // The control, ordinary and large lanes have connected and stalled.
    let mut streams = Vec::new();
    while streams.len() < 3 {
        match tokio::time::timeout(T, accepted.recv()).await {
            Ok(Some(s)) => streams.push(s),
            _ => panic!("only {} lanes connected", streams.len()),
        }
    }

    tokio::time::timeout(T, a.system.terminate())
        .await
        .expect("terminate held up by a peer that does not read");
    // A second, abrupt stop after the end changes nothing.
    a.remoting.shutdown();
    // Every connection the node had is closed (read out what it wrote).
    for mut s in streams {
        assert!(
            raw_peer::closed_within(&mut s, T).await,
            "a connection outlived its node"
        );
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_retrying_a_refused_connection_terminates_and_stops_retrying() {
    log_capture::install();
    let port = free_port();
    let a = node("daemonic", quick_detector()).await;
    let nowhere = a
        .remoting
        .resolve::<Calc>(&format!("volley://nobody@127.0.0.1:{port}/user/some-actor"))
        .unwrap();
    let (reply_to, _replies) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let reply_to = a
        .system
        .spawn(
            "replies",
            volley::Props::new(move || common::Relay(reply_to.clone())),
        )
        .unwrap();
    nowhere.tell(Calc::Add {
        a: 1,
        b: 1,
        reply_to,
    });
    // The lanes fail a few times (they retry every 50 to 200 ms).
    let remote = format!("remote=volley://nobody@127.0.0.1:{port}");
    volley_testkit::await_cond("a few refused connection attempts", || {
        log_capture::events(|e| e.text.starts_with("cannot connect") && e.text.contains(&remote))
            .len()
            >= 3
    });
    tokio::time::timeout(T, a.system.terminate())
        .await
        .expect("terminate held up by a refused connection");

    // Nobody dials the port any more: listen there and see no connection
    // for several of the node's retry pauses.
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let dialed = tokio::time::timeout(Duration::from_millis(1000), listener.accept()).await;
    assert!(
        dialed.is_err(),
        "the terminated node still dials {port}: {dialed:?}"
    );
}

/// How many of the ordinary lane's connections [`refusing_first_ordinary`]
/// refuses: the first failure is redialed at once (the association, made
/// meanwhile, asked for a redial), the second waits out the backoff.
const REFUSED: usize = 2;

/// A raw node that takes the control lane, refuses the ordinary lane's
/// first [`REFUSED`] connections, the first once the control lane has
/// carried a frame past its handshake (closes them unanswered; each
/// reported on `refused`), and reports
/// how many user messages each later ordinary connection carried, once it
/// closes.
fn refusing_first_ordinary(
    listener: TcpListener,
    me: Address,
) -> (
    tokio::sync::mpsc::UnboundedReceiver<()>,
    tokio::sync::mpsc::UnboundedReceiver<usize>,
) {
    let (refused_tx, refused) = tokio::sync::mpsc::unbounded_channel();
    let (carried_tx, carried) = tokio::sync::mpsc::unbounded_channel();
    let control_heard = std::sync::Arc::new(tokio::sync::Notify::new());
    tokio::spawn(async move {
        let mut ordinary = 0;
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let (lane, mut buf) = raw_peer::read_handshake(&mut s).await;
            if lane == Lane::Ordinary {
                ordinary += 1;
                if ordinary <= REFUSED {
                    let (heard, refused_tx) = (control_heard.clone(), refused_tx.clone());
                    tokio::spawn(async move {
                        if ordinary == 1 {
                            heard.notified().await;
                        }
                        drop(s);
                        let _ = refused_tx.send(());
                    });
                    continue;
                }
            }
            raw_peer::respond_accepted(&mut s, &me, 11).await;
            let (carried_tx, heard) = (carried_tx.clone(), control_heard.clone());
            tokio::spawn(async move {
                let first = || heard.notify_one();
                let messages = user_messages_until_closed(&mut s, &mut buf, lane, first).await;
                if lane == Lane::Ordinary {
                    let _ = carried_tx.send(messages);
                }
            });
        }
    });
    (refused, carried)
}

/// The user messages a lane's connection carries until it closes;
/// `first_frame` runs at its first frame past the handshake.
async fn user_messages_until_closed(
    s: &mut TcpStream,
    buf: &mut BytesMut,
    lane: Lane,
    first_frame: impl Fn(),
) -> usize {
    let decoder = Decoder::new(DecoderConfig::for_lane(lane));
    let (mut messages, mut frames) = (0, 0);
    loop {
        while let Ok(Some((pdu, used))) = decoder.decode_frame(buf) {
            if !matches!(pdu, Pdu::IncarnationStamp(_)) {
                frames += 1;
                if frames == 1 {
                    first_frame();
                }
            }
            messages += usize::from(matches!(pdu, Pdu::UserMessage(_)));
            let _ = buf.split_to(used);
        }
        match s.read_buf(buf).await {
            Ok(n) if n > 0 => {}
            _ => return messages,
        }
    }
}

/// A leaving node waits, within `shutdown_flush_timeout`, for a lane whose
/// first connection failed while its node still answers on another lane:
/// on a loaded machine a first handshake can time out and the redial
/// succeed. What was queued there is written before the node stops.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_node_waits_for_a_lane_redialing_a_node_that_answers() {
    log_capture::install();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let me: Address = format!("volley://redialed@127.0.0.1:{port}")
        .parse()
        .unwrap();
    let (mut refused, mut carried) = refusing_first_ordinary(listener, me.clone());
    // The second redial comes half a second after the leave has started,
    // so only a leave that waits for it writes the messages.
    let a = node(
        "redialing",
        RemoteSettings {
            reconnect_backoff: Duration::from_millis(500),
            shutdown_flush_timeout: T,
            ..RemoteSettings::default()
        },
    )
    .await;
    let sink = a
        .remoting
        .resolve::<Calc>(&format!("{me}/user/sink"))
        .unwrap();
    let reply_to = a
        .system
        .spawn(
            "replies",
            volley::Props::new(|| common::Relay(tokio::sync::mpsc::unbounded_channel().0)),
        )
        .unwrap();
    const QUEUED: usize = 5;
    for n in 0..QUEUED as i64 {
        sink.tell(Calc::Add {
            a: n,
            b: 1,
            reply_to: reply_to.clone(),
        });
    }
    for _ in 0..REFUSED {
        tokio::time::timeout(T, refused.recv())
            .await
            .expect("an ordinary connection was made");
    }
    let remote = format!("remote={me}");
    volley_testkit::await_cond("the node saw its ordinary connections fail", || {
        log_capture::events(|e| {
            e.text.contains("during the handshake; retrying")
                && e.text.contains(&remote)
                && e.text.contains("lane=Ordinary")
        })
        .len()
            >= REFUSED
    });
    let dead_before = a.system.dead_letter_count();
    tokio::time::timeout(T * 2, a.system.terminate())
        .await
        .expect("terminate ends");
    let written = tokio::time::timeout(T, carried.recv())
        .await
        .expect("the redial's connection closed")
        .expect("a count");
    assert_eq!(written, QUEUED, "the messages queued on the redialing lane");
    assert_eq!(a.system.dead_letter_count(), dead_before);
}

/// `Remoting::shutdown` returns at once, with its tasks aborted but not
/// gone; the system's `terminate` then waits for them, so the port is
/// free as it returns (a restart on the same port found it bound when
/// `terminate` skipped the wait after a `shutdown`).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_port_is_free_once_terminate_returns_even_after_a_shutdown() {
    for stop_first in [true, false] {
        let port = free_port();
        let b = node("port-b", on_port(port)).await;
        if stop_first {
            b.remoting.shutdown();
        }
        b.system.terminate().await;
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| {
            panic!("port {port} still bound (shutdown first: {stop_first}): {e}")
        });
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_asker_is_answered_after_a_clean_leave() {
    let port = free_port();
    let x = node("cache-x", quick_detector()).await;
    spawn_calculator(&x, "echo");
    let first = node("cache-client", on_port(port)).await;
    until_answered(&first, &x, "echo").await;
    first.system.terminate().await;

    let second = node("cache-client", on_port(port)).await;
    // The first ask of the new incarnation is answered: X does not answer
    // through what it knew of the first one.
    let echo = common::remote_ref(&second, &x, "echo");
    assert_eq!(ask_sum(&echo, T).await.unwrap(), 42);
    second.system.terminate().await;
    x.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_asker_is_answered_after_its_first_incarnation_was_quarantined() {
    let port = free_port();
    let x = node("cache-x", quick_detector()).await;
    spawn_calculator(&x, "echo");
    let events = record_events(&x);
    let first = node("cache-client", on_port(port)).await;
    until_answered(&first, &x, "echo").await;
    let first_uid = first.remoting.uid();
    // Gone without a goodbye: X gives the incarnation up for its silence.
    first.remoting.shutdown();
    events.fish_for_within(
        T,
        |e| matches!(e, RemotingEvent::Quarantined { uid, .. } if *uid == first_uid),
    );
    first.system.terminate().await;

    let second = node("cache-client", on_port(port)).await;
    assert_ne!(second.remoting.uid(), first_uid);
    let echo = common::remote_ref(&second, &x, "echo");
    assert_eq!(ask_sum(&echo, T).await.unwrap(), 42);
    second.system.terminate().await;
    x.system.terminate().await;
}
