//! A TCP relay in front of every member, for partitions. Each member
//! advertises the relay's port as its address (Artery's `canonical.port`)
//! and listens on another (`bind.port`); every connection to the member
//! goes through its relay. A connection only says which member it comes
//! from inside the protocol, so the relay asks the kernel: the dialling
//! socket's inode (`/proc/net/tcp`, `/proc/net/tcp6`) and which member's
//! process holds it (`/proc/<pid>/fd`); all members run on this machine.
//!
//! A partition closes every relayed connection that crosses it and closes
//! every new one at once: the members see their peers' connections fail, as
//! with a network that rejects them, and their failure detectors decide.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The member a relayed connection comes from, when found.
type Source = Option<usize>;

#[derive(Default)]
struct State {
    /// Each member's process id, by index.
    pids: Vec<u32>,
    /// Each member's side while a partition is in force.
    sides: Option<Vec<u8>>,
    /// Open relayed connections: from, to, the dialling side's socket.
    open: Vec<(Source, usize, TcpStream)>,
}

impl State {
    fn cut(&self, from: Source, to: usize) -> bool {
        match (&self.sides, from) {
            (Some(sides), Some(from)) => sides[from] != sides[to],
            _ => false,
        }
    }
}

/// The relays of one cluster.
pub struct Relays {
    state: Arc<Mutex<State>>,
    /// Connections whose member could not be found (never cut).
    unknown: Arc<AtomicU64>,
    /// The ports the members advertise, by index.
    pub ports: Vec<u16>,
}

impl Relays {
    /// One relay per member, forwarding to 127.0.0.1:`bind_ports[i]`.
    pub fn start(bind_ports: &[u16]) -> std::io::Result<Relays> {
        let state = Arc::new(Mutex::new(State::default()));
        let unknown = Arc::new(AtomicU64::new(0));
        let mut ports = Vec::new();
        for (to, &bind) in bind_ports.iter().enumerate() {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            ports.push(listener.local_addr()?.port());
            let (state, unknown) = (state.clone(), unknown.clone());
            std::thread::spawn(move || accept(listener, to, bind, &state, &unknown));
        }
        Ok(Relays {
            state,
            unknown,
            ports,
        })
    }

    /// The members' process ids, by index (before they dial each other).
    pub fn set_pids(&self, pids: Vec<u32>) {
        self.state.lock().expect("relay state").pids = pids;
    }

    /// Cuts every link between members on different `sides`.
    pub fn partition(&self, sides: Vec<u8>) {
        let mut state = self.state.lock().expect("relay state");
        state.sides = Some(sides);
        let (cut, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut state.open)
            .into_iter()
            .partition(|(from, to, _)| state.cut(*from, *to));
        state.open = keep;
        for (_, _, stream) in cut {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Connections whose member was not found (relayed, never cut).
    pub fn unknown(&self) -> u64 {
        self.unknown.load(Ordering::Relaxed)
    }
}

fn accept(listener: TcpListener, to: usize, bind: u16, state: &Mutex<State>, unknown: &AtomicU64) {
    for inbound in listener.incoming().map_while(Result::ok) {
        let relay_port = listener.local_addr().map_or(0, |a| a.port());
        let dialled_from = inbound.peer_addr().map_or(0, |a| a.port());
        let pids = state.lock().expect("relay state").pids.clone();
        let from = owner(dialled_from, relay_port, &pids);
        if from.is_none() {
            unknown.fetch_add(1, Ordering::Relaxed);
        }
        let mut s = state.lock().expect("relay state");
        if s.cut(from, to) {
            let _ = inbound.shutdown(Shutdown::Both);
            continue;
        }
        let Ok(outbound) = TcpStream::connect(("127.0.0.1", bind)) else {
            continue;
        };
        if let Ok(clone) = inbound.try_clone() {
            s.open.push((from, to, clone));
        }
        drop(s);
        pipe(inbound, outbound);
    }
}

/// Copies both ways until either side ends, then closes both.
fn pipe(a: TcpStream, b: TcpStream) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    std::thread::spawn(move || copy(a, b));
    std::thread::spawn(move || copy(b2, a2));
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Which of the processes `pids` holds the socket connected from
/// `local_port` to `remote_port` on the loopback.
fn owner(local_port: u16, remote_port: u16, pids: &[u32]) -> Source {
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            socket_inode(&text, local_port, remote_port)
        })?;
    let link = format!("socket:[{inode}]");
    pids.iter().position(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.map_while(Result::ok).any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == link.as_str())
            })
        })
    })
}

/// The inode of the socket from `local_port` to `remote_port` in a
/// `/proc/net/tcp` or `tcp6` table (addresses as hex `ADDR:PORT`).
fn socket_inode(table: &str, local_port: u16, remote_port: u16) -> Option<u64> {
    let port = |field: &str| u16::from_str_radix(field.rsplit(':').next()?, 16).ok();
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (local, remote, inode) = (f.get(1)?, f.get(2)?, f.get(9)?);
        (port(local) == Some(local_port) && port(remote) == Some(remote_port))
            .then(|| inode.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_socket_in_a_proc_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1\n\
           1: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2222 1\n";
        assert_eq!(socket_inode(table, 0xC350, 0x1F90), Some(2222));
        assert_eq!(socket_inode(table, 0x1F90, 0xC350), None);
    }

    #[test]
    fn finds_which_process_dialled() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, from) = listener.accept().unwrap();
        let me = std::process::id();
        let relay = listener.local_addr().unwrap().port();
        assert_eq!(owner(from.port(), relay, &[1, me]), Some(1));
        assert_eq!(owner(from.port(), relay, &[1]), None);
        drop(client);
    }

    #[test]
    fn a_partition_closes_links_across_it_only() {
        // Two "members" listening; the relays in front of them.
        let members: Vec<TcpListener> = (0..2)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let binds: Vec<u16> = members
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
        let relays = Relays::start(&binds).unwrap();
        // This process plays member 0 dialling member 1.
        relays.set_pids(vec![std::process::id(), 0]);
        let mut dial = TcpStream::connect(("127.0.0.1", relays.ports[1])).unwrap();
        let (mut at_member, _) = members[1].accept().unwrap();
        dial.write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        at_member.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        assert_eq!(relays.unknown(), 0);
        relays.partition(vec![0, 1]);
        // The relayed connection is closed: the member reads its end.
        assert_eq!(at_member.read(&mut got).unwrap_or(0), 0);
        // A new connection across the partition is closed at once.
        let mut again = TcpStream::connect(("127.0.0.1", relays.ports[1])).unwrap();
        assert_eq!(again.read(&mut got).unwrap_or(0), 0);
    }
}
