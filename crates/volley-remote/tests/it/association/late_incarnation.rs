//! A late answer of a node's previous incarnation does not give its new
//! incarnation up (docs/reference/remoting.md#incarnations-and-quarantine).
//!
//! A relay in front of node A holds A's answers to B's dials while A's
//! first incarnation is replaced by a second at the same address, which
//! then associates with B. Released, the first incarnation's answers reach
//! B's lanes after the second incarnation's handshake. Before incarnations
//! had an order this was taken as a restart: the second incarnation was
//! given up and refused for good. Now its stamp says the first one is the
//! older: refused and counted, and the second stays associated both ways.

use crate::common;

use std::time::Duration;

use bytes::BytesMut;
use common::holding_relay::HoldingRelay;
use common::{ask_sum, free_port, node, record_events, remote_ref, spawn_calculator, T};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use volley_remote::wire::{
    Address, Decoder, DecoderConfig, Encoder, HandshakeStatus, IncarnationStamp, Lane, Pdu,
};
use volley_remote::{DisassociationReason, RemoteSettings, RemotingEvent};

/// Node A's settings: listening on `port`, known by the relay's.
fn behind(port: u16, relay: &HoldingRelay) -> RemoteSettings {
    RemoteSettings {
        port,
        canonical_port: Some(relay.port),
        ..RemoteSettings::default()
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_of_the_previous_incarnation_does_not_replace_the_new_one() {
    // B's dials wait for the held answers past any test's length.
    let b = node(
        "beta",
        RemoteSettings {
            handshake_timeout: Duration::from_secs(60),
            ..RemoteSettings::default()
        },
    )
    .await;
    spawn_calculator(&b, "calc");
    let events = record_events(&b);
    let port = free_port();
    let relay = HoldingRelay::start(port).await;
    let first = node("alpha", behind(port, &relay)).await;
    let alpha = first.remoting.address().clone();

    // B dials the first incarnation; its answers stay in the relay.
    relay.hold(false, true);
    let to_first = remote_ref(&b, &first, "calc");
    let queued = tokio::spawn(async move { ask_sum(&to_first, T).await });
    common::eventually("the first incarnation answered B's dial", || {
        relay.held_chunks() > 0
    })
    .await;
    first.remoting.shutdown();
    first.system.terminate().await;

    // The second incarnation, at the same address, talks to B first (B's
    // answer waits: it goes on B's lanes, held).
    let second = node("alpha", behind(port, &relay)).await;
    assert_eq!(second.remoting.address(), &alpha);
    spawn_calculator(&second, "calc");
    let to_b = remote_ref(&second, &b, "calc");
    let answered = tokio::spawn(async move { ask_sum(&to_b, T).await });
    let uid = second.remoting.uid();
    events.fish_for(|e| {
        matches!(e, RemotingEvent::Associated { remote, uid: u } if *remote == alpha && *u == uid)
    });

    // The first incarnation's answers reach B now.
    relay.heal();
    common::eventually("B refused the first incarnation's late answer", || {
        b.remoting.superseded_handshakes(&alpha).unwrap_or(0) > 0
    })
    .await;

    // The second incarnation stays associated, both ways: B's message
    // queued before the restart reaches it, and new ones do.
    assert_eq!(queued.await.unwrap().ok(), Some(42));
    assert_eq!(answered.await.unwrap().ok(), Some(42));
    assert_eq!(
        ask_sum(&remote_ref(&b, &second, "calc"), T).await.ok(),
        Some(42)
    );
    assert_eq!(
        ask_sum(&remote_ref(&second, &b, "calc"), T).await.ok(),
        Some(42)
    );
    let restarts: Vec<_> = common::events_so_far(&events)
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                RemotingEvent::Disassociated {
                    reason: DisassociationReason::Restarted,
                    ..
                }
            ) || matches!(e, RemotingEvent::Quarantined { .. })
        })
        .collect();
    assert!(
        restarts.is_empty(),
        "the new incarnation was given up: {restarts:?}"
    );
    b.system.terminate().await;
    second.system.terminate().await;
}

/// A raw connection that shakes hands with `to` as incarnation `uid` of
/// `from`, stamped `stamp` (handshake version 2); returns it once the
/// stamp is sent, with the stamp `to` answered with.
async fn stamped_handshake(to: &Address, from: &Address, uid: u64, stamp: u64) -> (TcpStream, u64) {
    let mut s = crate::raw_peer::connect(to).await;
    let mut out = crate::raw_peer::stamped_request_bytes(to, from, uid);
    s.write_all(&out).await.unwrap();
    // The answer: an accepted response of version 2, then the stamp.
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    while frames.len() < 2 {
        match decoder.decode_frame(&buf).unwrap() {
            Some((pdu, used)) => {
                frames.push(match pdu {
                    Pdu::HandshakeResponse(r) => {
                        assert_eq!((r.status, r.version), (HandshakeStatus::Accepted, 2));
                        None
                    }
                    Pdu::IncarnationStamp(s) => Some(s.stamp),
                    other => panic!("unexpected {other:?}"),
                });
                let _ = buf.split_to(used);
            }
            None => assert!(
                s.read_buf(&mut buf).await.unwrap() > 0,
                "closed in the answer"
            ),
        }
    }
    let answered = frames[1].expect("the stamp after the response");
    out.clear();
    Encoder::for_lane(Lane::Control)
        .encode(&Pdu::IncarnationStamp(IncarnationStamp { stamp }), &mut out)
        .unwrap();
    s.write_all(&out).await.unwrap();
    (s, answered)
}

/// The acceptor's side, on raw sockets: a stamped handshake of an older
/// incarnation of a node B talks to is answered, then refused once its
/// stamp is read (the connection closes, nothing of it is delivered), and
/// B stays associated with the current incarnation.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_stamped_handshake_is_refused_and_the_current_incarnation_kept() {
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let a = node("alpha", RemoteSettings::default()).await;
    spawn_calculator(&a, "calc");
    assert_eq!(ask_sum(&remote_ref(&a, &b, "calc"), T).await.ok(), Some(42));
    let events = record_events(&b);
    let alpha = a.remoting.address().clone();

    // Stamp 1: long before the current incarnation started.
    let (mut old, b_stamp) = stamped_handshake(b.remoting.address(), &alpha, 77, 1).await;
    assert!(b_stamp > 1, "B tells its own start");
    assert!(
        crate::raw_peer::closed_within(&mut old, T).await,
        "the older incarnation's connection stays open"
    );
    assert_eq!(b.remoting.superseded_handshakes(&alpha), Some(1));

    assert_eq!(ask_sum(&remote_ref(&b, &a, "calc"), T).await.ok(), Some(42));
    assert_eq!(ask_sum(&remote_ref(&a, &b, "calc"), T).await.ok(), Some(42));
    let given_up: Vec<_> = common::events_so_far(&events)
        .into_iter()
        .filter(|e| !matches!(e, RemotingEvent::Associated { .. }))
        .collect();
    assert!(given_up.is_empty(), "{given_up:?}");
    b.system.terminate().await;
    a.system.terminate().await;
}
