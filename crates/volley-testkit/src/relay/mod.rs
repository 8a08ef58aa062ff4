//! A TCP relay in front of every member of a multi-process test, for
//! partitions and slow links (Jepsen's and Pekko's multi-node `blackhole`,
//! on loopback). Each member advertises its relay's port as its address
//! (volley's `canonical_port`, Artery's `canonical.port`) and listens on
//! another; every connection to the member goes through its relay.
//!
//! The relay learns which member dialled a connection from the kernel
//! (`owner`), so each directed link — the bytes that member `from` sends to
//! member `to`, on any connection between them — has a [`LinkMode`] of its
//! own. Each connection is set up on a thread of its own (`setup`), and
//! one look-up finds the diallers of all the connections waiting
//! (`identifier`), so a burst of redials costs no more than one. A
//! connection whose dialler is not found ([`Relays::unknown`] counts
//! them) is looked for again whenever a link changes; until found it
//! passes, and it is cut while any link of the member it reaches is
//! dropped.
//!
//! ```no_run
//! use volley_testkit::relay::{LinkMode, Relays};
//!
//! // Members 0, 1 and 2 listen on these ports; they advertise `relays.ports()`.
//! let relays = Relays::start(&[7001, 7002, 7003]).unwrap();
//! # let pids = vec![1, 2, 3];
//! relays.set_pids(pids); // before the members dial each other
//! relays.set_link(0, 1, LinkMode::Block); // 0's bytes to 1 are held
//! relays.partition(&[0, 0, 1]); // 2 is cut off from 0 and 1
//! relays.heal(); // every link passes again
//! ```

mod identifier;
mod owner;
mod pump;
mod setup;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use identifier::{Identifier, Identify};

/// What happens to the bytes of one directed link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkMode {
    /// Relayed at once.
    #[default]
    Pass,
    /// Every connection that carries the link is closed, and new ones are
    /// closed as they are accepted: both ends see their connection fail,
    /// as with a network that rejects them. A connection carries both
    /// directions, so it closes for its other direction too.
    Drop,
    /// Each chunk is relayed this long after it arrived, in order.
    Delay(Duration),
    /// One-way black hole: the bytes are held (TCP's back-pressure stops
    /// the sender once the buffers fill) and flow again, none lost, when
    /// the link is set back to `Pass`. The other direction keeps flowing.
    Block,
}

/// A directed link: bytes from member `.0` to member `.1`.
type Link = (usize, usize);

/// A relayed connection, kept to close it when its link drops.
struct Open {
    id: u64,
    /// The dialling member, once found (its pumps read it too).
    from: Dialler,
    /// The dialling socket's port and the relay's: where to look for the
    /// dialler again.
    ports: (u16, u16),
    to: usize,
    streams: [TcpStream; 2],
}

/// The member that dialled a connection, set once it is found: when the
/// connection is accepted, or when a link changes ([`Relays::set_link`]).
pub(crate) type Dialler = Arc<OnceLock<usize>>;

#[derive(Default)]
struct State {
    /// Each member's process id, by index.
    pids: Vec<u32>,
    /// Links not in `Pass`.
    links: HashMap<Link, LinkMode>,
    open: Vec<Open>,
    next_id: u64,
}

impl State {
    fn mode(&self, link: Option<Link>) -> LinkMode {
        link.and_then(|l| self.links.get(&l).copied())
            .unwrap_or_default()
    }

    /// Whether a connection dialled by `from` to `to` carries a dropped
    /// link; one whose dialler is unknown does when any link of `to`
    /// drops: it may cross a partition, and if it does not, cutting it
    /// costs its dialler a redial, whose dialler is found again.
    fn refuses(&self, from: Option<usize>, to: usize) -> bool {
        match from {
            Some(from) => {
                let dropped = |link: Link| self.mode(Some(link)) == LinkMode::Drop;
                dropped((from, to)) || dropped((to, from))
            }
            None => self.any_link_drops(to),
        }
    }

    /// Whether a link from or to `member` drops.
    fn any_link_drops(&self, member: usize) -> bool {
        self.links
            .iter()
            .any(|(link, mode)| (link.0 == member || link.1 == member) && *mode == LinkMode::Drop)
    }

    fn close_dropped(&mut self) {
        let (cut, keep): (Vec<Open>, Vec<Open>) = std::mem::take(&mut self.open)
            .into_iter()
            .partition(|o| self.refuses(o.from.get().copied(), o.to));
        self.open = keep;
        for open in cut {
            close(&open.streams);
        }
    }
}

fn close(streams: &[TcpStream]) {
    for s in streams {
        let _ = s.shutdown(Shutdown::Both);
    }
}

/// What the accepting and relaying threads share with [`Relays`].
struct Shared {
    state: Mutex<State>,
    /// Signalled at every change of a link's mode.
    changed: Condvar,
    unknown: AtomicU64,
    /// How a connection's dialler is found: by the look-up thread while
    /// it is set up, directly when a link changes.
    identifier: Identifier,
    identify: Arc<Identify>,
    /// Bytes written on, both directions of every connection.
    relayed: AtomicU64,
    stopped: AtomicBool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // A relay thread that panicked leaves consistent data behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The relays of one group of members, one per member on a loopback port
/// of its own; stopped (every relayed connection closed) when dropped.
pub struct Relays {
    shared: Arc<Shared>,
    ports: Vec<u16>,
}

impl Relays {
    /// One relay per member, member `i` listening on 127.0.0.1:`targets[i]`.
    pub fn start(targets: &[u16]) -> io::Result<Relays> {
        Self::start_identifying(targets, Arc::new(owner::owners))
    }

    /// [`Relays::start`], finding diallers with `identify`.
    fn start_identifying(targets: &[u16], identify: Arc<Identify>) -> io::Result<Relays> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            unknown: AtomicU64::new(0),
            identifier: Identifier::start(identify.clone())?,
            identify,
            relayed: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let mut ports = Vec::new();
        for (to, &target) in targets.iter().enumerate() {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            ports.push(listener.local_addr()?.port());
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("relay-accept-{to}"))
                .spawn(move || setup::accept(listener, to, target, &shared))?;
        }
        Ok(Relays { shared, ports })
    }

    /// The relays' ports, by member: what the members advertise.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The members' process ids, by index; set before they dial each
    /// other, or their connections are not found.
    pub fn set_pids(&self, pids: Vec<u32>) {
        self.shared.state().pids = pids;
    }

    /// Member `member` runs as process `pid` now (a restart).
    pub fn set_pid(&self, member: usize, pid: u32) {
        let mut state = self.shared.state();
        if state.pids.len() <= member {
            state.pids.resize(member + 1, 0);
        }
        state.pids[member] = pid;
    }

    /// Sets the mode of the link from member `from` to member `to`.
    /// Connections whose dialler was not found are looked for again
    /// first, so that the link's mode applies to them too.
    pub fn set_link(&self, from: usize, to: usize, mode: LinkMode) {
        self.find_unknown_diallers();
        let mut state = self.shared.state();
        if mode == LinkMode::Pass {
            state.links.remove(&(from, to));
        } else {
            state.links.insert((from, to), mode);
        }
        state.close_dropped();
        self.shared.changed.notify_all();
    }

    /// Looks again for the dialler of each open connection whose dialler
    /// was not found (outside the lock: the look-up reads the kernel's
    /// tables).
    fn find_unknown_diallers(&self) {
        let (diallers, sockets, pids) = {
            let state = self.shared.state();
            let unknown: Vec<&Open> = state
                .open
                .iter()
                .filter(|o| o.from.get().is_none())
                .collect();
            let diallers: Vec<Dialler> = unknown.iter().map(|o| o.from.clone()).collect();
            let sockets: Vec<(u16, u16)> = unknown.iter().map(|o| o.ports).collect();
            (diallers, sockets, state.pids.clone())
        };
        if sockets.is_empty() {
            return;
        }
        let found = (self.shared.identify)(&sockets, &pids);
        for (dialler, found) in diallers.iter().zip(found) {
            if let Some(from) = found {
                let _ = dialler.set(from);
            }
        }
    }

    /// The mode of the link from `from` to `to`.
    pub fn link(&self, from: usize, to: usize) -> LinkMode {
        self.shared.state().mode(Some((from, to)))
    }

    /// Drops every link between members on different `sides` (indexed by
    /// member), both ways; links within a side are left as they are.
    pub fn partition(&self, sides: &[u8]) {
        for (a, side_a) in sides.iter().enumerate() {
            for (b, side_b) in sides.iter().enumerate() {
                if side_a != side_b {
                    self.set_link(a, b, LinkMode::Drop);
                }
            }
        }
    }

    /// Every link passes again.
    pub fn heal(&self) {
        self.shared.state().links.clear();
        self.shared.changed.notify_all();
    }

    /// Connections whose dialling member was not found when they were
    /// accepted (but for diallers that had closed already).
    pub fn unknown(&self) -> u64 {
        self.shared.unknown.load(Ordering::Relaxed)
    }

    /// Every byte relayed so far, both directions of every connection:
    /// each connection between members runs through the relay of the
    /// member dialled, so this is all the traffic between them.
    pub fn relayed_bytes(&self) -> u64 {
        self.shared.relayed.load(Ordering::Relaxed)
    }
}

impl Drop for Relays {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let mut state = self.shared.state();
        for open in state.open.drain(..) {
            close(&open.streams);
        }
        state.links.clear();
        self.shared.changed.notify_all();
        drop(state);
        // Wakes each accepting thread, which then sees `stopped`.
        for port in &self.ports {
            let _ = TcpStream::connect(("127.0.0.1", *port));
        }
    }
}
