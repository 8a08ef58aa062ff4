//! Setting up a relayed connection: accepting it, dialling its member,
//! finding its dialler, and handing both ends to the pumps.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use super::{close, owner, pump, Open, Shared};

/// How many times a connection's dialler is looked for when it is set up.
const LOOK_UPS: usize = 3;

/// Accepts member `to`'s connections (it listens on `target`), each set
/// up on a thread of its own.
pub(super) fn accept(listener: TcpListener, to: usize, target: u16, shared: &Arc<Shared>) {
    let relay_port = listener.local_addr().map_or(0, |a| a.port());
    for inbound in listener.incoming() {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(inbound) = inbound else { continue };
        // Set up on a thread of its own: finding the dialler reads the
        // kernel's socket tables, which under load took long enough that
        // the dozen redials of a restart, set up one after another here,
        // outlasted their handshake timeout and redialled, faster than
        // they were set up (the member looked deaf for seconds).
        // A thread that cannot start drops (closes) the connection.
        let shared = shared.clone();
        let _ = std::thread::Builder::new()
            .name(format!("relay-setup-{to}"))
            .spawn(move || set_up(inbound, relay_port, to, target, &shared));
    }
}

/// Finds who dialled `inbound`, dials member `to` (listening on `target`)
/// for it, and relays the two, unless a dropped link refuses it.
fn set_up(inbound: TcpStream, relay_port: u16, to: usize, target: u16, shared: &Arc<Shared>) {
    let ports = (inbound.peer_addr().map_or(0, |a| a.port()), relay_port);
    // While a link of the member drops, the dialler is found first, so
    // that a refused connection never reaches the member. Otherwise the
    // member is dialled first: while it is down (killed, restarting) its
    // peers redial it every few tens of milliseconds, and a look-up for
    // each, all refused anyway, starved the relays and the members.
    let mut found = None;
    if shared.state().any_link_drops(to) {
        let dialler = find_dialler(&inbound, ports, shared);
        if dialler == Found::Closed || shared.state().refuses(dialler.member(), to) {
            close(&[inbound]);
            return;
        }
        found = Some(dialler);
    }
    // A member that is not listening (stopped, killed) refuses.
    let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)) else {
        close(&[inbound]);
        return;
    };
    let found = found.unwrap_or_else(|| find_dialler(&inbound, ports, shared));
    match found {
        // A dialler that already closed its end (a dial given up, under
        // load) left no socket to find, and nothing for the member.
        Found::Closed => return close(&[inbound, outbound]),
        Found::Unknown => {
            shared.unknown.fetch_add(1, Ordering::Relaxed);
        }
        Found::Member(_) => {}
    }
    register_and_relay(shared, found.member(), ports, to, inbound, outbound);
}

/// Who dialled a connection, as far as the relay can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Member(usize),
    /// Not a member's socket, or one the look-ups missed.
    Unknown,
    /// The dialler closed its end, leaving no socket to find.
    Closed,
}

impl Found {
    fn member(self) -> Option<usize> {
        match self {
            Found::Member(member) => Some(member),
            _ => None,
        }
    }
}

/// Looks for the member whose socket dialled `inbound`, from the
/// dialling port and the relay's (`ports`). The kernel's table is read
/// in pieces while sockets come and go, so a live socket can be missed
/// once: it is looked for again before giving up.
fn find_dialler(inbound: &TcpStream, ports: (u16, u16), shared: &Shared) -> Found {
    for _ in 0..LOOK_UPS {
        let pids = shared.state().pids.clone();
        if let Some(member) = shared.identifier.find(ports, pids) {
            return Found::Member(member);
        }
        if owner::closed_by_dialler(inbound) {
            return Found::Closed;
        }
    }
    Found::Unknown
}

/// Keeps the connection (to close it when its link drops) and relays it,
/// unless a link dropped meanwhile.
fn register_and_relay(
    shared: &Arc<Shared>,
    from: Option<usize>,
    ports: (u16, u16),
    to: usize,
    inbound: TcpStream,
    outbound: TcpStream,
) {
    let (Ok(in2), Ok(out2)) = (inbound.try_clone(), outbound.try_clone()) else {
        return;
    };
    let dialler = Arc::new(OnceLock::new());
    if let Some(from) = from {
        let _ = dialler.set(from);
    }
    let id = {
        // Judged under the lock that `set_link` takes, so no drop slips
        // between the check and the registration.
        let mut state = shared.state();
        if state.refuses(from, to) {
            close(&[inbound, outbound]);
            return;
        }
        let id = state.next_id;
        state.next_id += 1;
        state.open.push(Open {
            id,
            from: dialler.clone(),
            ports,
            to,
            streams: [in2, out2],
        });
        id
    };
    pump::relay(shared.clone(), id, inbound, outbound, dialler, to);
}
