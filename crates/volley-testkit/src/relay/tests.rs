//! The relay's set-up, with stand-ins for finding diallers.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{identifier::Identify, LinkMode, Relays};
use crate::{await_cond, dilated};

/// One member listening, not blocking, behind relays that find diallers
/// with `identify`.
fn relayed(identify: Arc<Identify>) -> (Relays, TcpListener) {
    let member = TcpListener::bind("127.0.0.1:0").unwrap();
    member.set_nonblocking(true).unwrap();
    let port = member.local_addr().unwrap().port();
    let relays = Relays::start_identifying(&[port], identify).unwrap();
    (relays, member)
}

fn dial(relays: &Relays) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", relays.ports()[0])).unwrap();
    stream
        .set_read_timeout(Some(dilated(Duration::from_secs(10))))
        .unwrap();
    stream
}

/// The member's end of the next relayed connection, waited for.
fn accepted(member: &TcpListener) -> TcpStream {
    let mut accepted = None;
    await_cond("a relayed connection reaches the member", || {
        accepted = member.accept().ok().map(|(s, _)| s);
        accepted.is_some()
    });
    let stream = accepted.expect("accepted");
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(dilated(Duration::from_secs(10))))
        .unwrap();
    stream
}

fn closed(stream: &mut TcpStream) -> bool {
    stream.read(&mut [0u8; 1]).map_or(true, |n| n == 0)
}

/// A stand-in that finds every socket member 0's, counting its look-ups;
/// the first waits until `release` is sent (`entered` says it began).
struct HeldFirst {
    identify: Arc<Identify>,
    look_ups: Arc<AtomicUsize>,
    entered: Receiver<()>,
    release: Sender<()>,
}

fn first_look_up_held() -> HeldFirst {
    let (entered_tx, entered) = channel();
    let (release, held) = channel::<()>();
    let (entered_tx, held) = (Mutex::new(entered_tx), Mutex::new(held));
    let look_ups = Arc::new(AtomicUsize::new(0));
    let counted = look_ups.clone();
    let identify = move |sockets: &[(u16, u16)], _: &[u32]| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            entered_tx.lock().unwrap().send(()).unwrap();
            let _ = held.lock().unwrap().recv();
        }
        vec![Some(0); sockets.len()]
    };
    HeldFirst {
        identify: Arc::new(identify),
        look_ups,
        entered,
        release,
    }
}

/// Connections that arrive while a look-up is under way are all found by
/// the next one: the diallers of a burst of redials cost two look-ups,
/// not one each (one each, under load, outlasted the dials' handshake
/// timeout).
#[test]
fn the_connections_waiting_for_a_look_up_share_the_next() {
    let held = first_look_up_held();
    let (relays, member) = relayed(held.identify);
    let mut dials = vec![dial(&relays)];
    held.entered
        .recv_timeout(dilated(Duration::from_secs(10)))
        .expect("the first dialler is looked for");
    for _ in 0..5 {
        dials.push(dial(&relays));
    }
    await_cond("six connections wait for a look-up", || {
        relays.shared.identifier.waiting() == 6
    });
    held.release.send(()).unwrap();
    let mut at_member: Vec<TcpStream> = (0..6).map(|_| accepted(&member)).collect();
    for (i, d) in dials.iter_mut().enumerate() {
        d.write_all(&[i as u8]).unwrap();
    }
    let mut got: Vec<u8> = at_member
        .iter_mut()
        .map(|s| {
            let mut byte = [0u8; 1];
            s.read_exact(&mut byte).unwrap();
            byte[0]
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3, 4, 5]);
    assert_eq!(held.look_ups.load(Ordering::SeqCst), 2);
    assert_eq!(relays.unknown(), 0);
}

/// A stand-in that finds member 1 once `known` is set, none before.
fn found_once(known: &Arc<AtomicBool>) -> Arc<Identify> {
    let known = known.clone();
    Arc::new(move |sockets: &[(u16, u16)], _: &[u32]| {
        let found = known.load(Ordering::SeqCst).then_some(1);
        vec![found; sockets.len()]
    })
}

#[test]
fn a_dialler_found_only_later_is_cut_when_its_link_drops() {
    let known = Arc::new(AtomicBool::new(false));
    let (relays, member) = relayed(found_once(&known));
    let mut dialled = dial(&relays);
    let mut at_member = accepted(&member);
    await_cond("the connection is counted unknown", || {
        relays.unknown() == 1
    });
    known.store(true, Ordering::SeqCst);
    // Found at this change; a drop between two other members leaves it.
    relays.set_link(1, 2, LinkMode::Drop);
    dialled.write_all(b"ok").unwrap();
    let mut got = [0u8; 2];
    at_member.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ok");
    relays.set_link(1, 0, LinkMode::Drop);
    assert!(closed(&mut dialled));
}

#[test]
fn a_dialler_never_found_is_cut_while_a_link_of_its_member_drops() {
    let (relays, member) = relayed(Arc::new(|sockets: &[(u16, u16)], _: &[u32]| {
        vec![None; sockets.len()]
    }));
    let mut dialled = dial(&relays);
    let _at_member = accepted(&member);
    relays.set_link(0, 3, LinkMode::Drop);
    assert!(closed(&mut dialled));
    let mut again = dial(&relays);
    assert!(closed(&mut again));
}
