//! The TCP relay: this process plays member 0 and dials member 1, a bare
//! listener, through member 1's relay; each link mode is seen from both
//! ends of the relayed connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use volley_testkit::relay::{LinkMode, Relays};
use volley_testkit::{await_cond, dilated};

/// Member 1's listener, the relays, and one connection from member 0 (this
/// process) to member 1: the dialling end and member 1's end.
struct Linked {
    relays: Relays,
    member: TcpListener,
    dial: TcpStream,
    at_member: TcpStream,
}

fn linked() -> Linked {
    let members: Vec<TcpListener> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let targets: Vec<u16> = members
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    let relays = Relays::start(&targets).unwrap();
    relays.set_pids(vec![std::process::id(), 0]);
    let member = members.into_iter().nth(1).unwrap();
    let dial = TcpStream::connect(("127.0.0.1", relays.ports()[1])).unwrap();
    let (at_member, _) = member.accept().unwrap();
    for s in [&dial, &at_member] {
        s.set_read_timeout(Some(dilated(Duration::from_secs(10))))
            .unwrap();
    }
    Linked {
        relays,
        member,
        dial,
        at_member,
    }
}

fn send(to: &mut TcpStream, bytes: &[u8]) {
    to.write_all(bytes).unwrap();
}

fn receive(from: &mut TcpStream, len: usize) -> Vec<u8> {
    let mut got = vec![0; len];
    from.read_exact(&mut got).unwrap();
    got
}

/// Whether `from` stays silent for `window` (time passing is the test).
fn silent_for(from: &mut TcpStream, window: Duration) -> bool {
    from.set_read_timeout(Some(window)).unwrap();
    let mut byte = [0u8; 1];
    let silent = matches!(
        from.read(&mut byte),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
    );
    from.set_read_timeout(Some(dilated(Duration::from_secs(10))))
        .unwrap();
    silent
}

/// Whether `from` was closed by the relay.
fn closed(from: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    from.read(&mut byte).map_or(true, |n| n == 0)
}

#[test]
fn a_passing_link_relays_both_ways_and_knows_its_dialler() {
    let mut l = linked();
    send(&mut l.dial, b"ping");
    assert_eq!(receive(&mut l.at_member, 4), b"ping");
    send(&mut l.at_member, b"pong");
    assert_eq!(receive(&mut l.dial, 4), b"pong");
    // Counted just after each write: both directions, once.
    await_cond("8 bytes counted", || l.relays.relayed_bytes() == 8);
    assert_eq!(l.relays.unknown(), 0);
    assert_eq!(l.relays.link(0, 1), LinkMode::Pass);
}

#[test]
fn a_blocked_link_holds_one_direction_and_loses_nothing() {
    let mut l = linked();
    l.relays.set_link(0, 1, LinkMode::Block);
    send(&mut l.dial, b"held");
    assert!(silent_for(&mut l.at_member, Duration::from_millis(200)));
    // The other direction flows.
    send(&mut l.at_member, b"back");
    assert_eq!(receive(&mut l.dial, 4), b"back");
    l.relays.set_link(0, 1, LinkMode::Pass);
    assert_eq!(receive(&mut l.at_member, 4), b"held");
}

#[test]
fn a_delayed_link_relays_in_order_after_the_delay() {
    let mut l = linked();
    let delay = Duration::from_millis(300);
    l.relays.set_link(0, 1, LinkMode::Delay(delay));
    let sent = Instant::now();
    send(&mut l.dial, b"one");
    send(&mut l.dial, b"two");
    assert_eq!(receive(&mut l.at_member, 6), b"onetwo");
    assert!(sent.elapsed() >= delay, "{:?}", sent.elapsed());
    l.relays.set_link(0, 1, LinkMode::Pass);
    send(&mut l.dial, b"now");
    assert_eq!(receive(&mut l.at_member, 3), b"now");
}

#[test]
fn a_dropped_link_closes_its_connections_and_refuses_new_ones() {
    let mut l = linked();
    // Dropping either direction closes the connection that carries both.
    l.relays.set_link(1, 0, LinkMode::Drop);
    assert!(closed(&mut l.at_member));
    assert!(closed(&mut l.dial));
    let mut again = TcpStream::connect(("127.0.0.1", l.relays.ports()[1])).unwrap();
    again
        .set_read_timeout(Some(dilated(Duration::from_secs(10))))
        .unwrap();
    assert!(closed(&mut again));
    l.relays.heal();
    let mut healed = TcpStream::connect(("127.0.0.1", l.relays.ports()[1])).unwrap();
    let (mut at_member, _) = l.member.accept().unwrap();
    send(&mut healed, b"back");
    assert_eq!(receive(&mut at_member, 4), b"back");
}

#[test]
fn a_partition_drops_links_across_it_only() {
    let l = linked();
    l.relays.partition(&[0, 1, 1]);
    assert_eq!(l.relays.link(0, 1), LinkMode::Drop);
    assert_eq!(l.relays.link(2, 0), LinkMode::Drop);
    assert_eq!(l.relays.link(1, 2), LinkMode::Pass);
    l.relays.heal();
    assert_eq!(l.relays.link(0, 1), LinkMode::Pass);
}
