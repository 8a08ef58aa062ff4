//! Which member dialled a relayed connection. A connection says whose it
//! is only inside the protocol, so the relay asks the kernel: the dialling
//! socket's inode (`/proc/net/tcp`, `/proc/net/tcp6`) and which member's
//! process holds it (`/proc/<pid>/fd`). All members run on this machine.

/// Which of the processes `pids` holds the socket connected from
/// `local_port` to `remote_port` on the loopback; `None` when none does
/// (or outside Linux).
#[cfg(test)]
pub(crate) fn owner(local_port: u16, remote_port: u16, pids: &[u32]) -> Option<usize> {
    owners(&[(local_port, remote_port)], pids)[0]
}

/// [`owner`] of each `(local_port, remote_port)` in `sockets`, with one
/// read of the kernel's tables and of each process's descriptors for all
/// of them: a read costs as much for one socket as for a hundred.
pub(crate) fn owners(sockets: &[(u16, u16)], pids: &[u32]) -> Vec<Option<usize>> {
    let mut inodes: Vec<Option<u64>> = vec![None; sockets.len()];
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if inodes.iter().all(Option::is_some) {
            break;
        }
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        let found = socket_inodes(&text, sockets);
        for (inode, found) in inodes.iter_mut().zip(found) {
            *inode = inode.or(found);
        }
    }
    let mut owners: Vec<Option<usize>> = vec![None; sockets.len()];
    for (index, pid) in pids.iter().enumerate() {
        if inodes
            .iter()
            .zip(&owners)
            .all(|(i, o)| i.is_none() || o.is_some())
        {
            break;
        }
        let held = socket_inodes_of(*pid);
        for (owner, inode) in owners.iter_mut().zip(&inodes) {
            if owner.is_none() && inode.is_some_and(|i| held.contains(&i)) {
                *owner = Some(index);
            }
        }
    }
    owners
}

/// The inodes of the sockets process `pid` holds.
fn socket_inodes_of(pid: u32) -> std::collections::HashSet<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Default::default();
    };
    fds.map_while(Result::ok)
        .filter_map(|fd| {
            let link = std::fs::read_link(fd.path()).ok()?;
            let link = link.to_str()?;
            link.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// Whether the dialler of `accepted` has closed its end with nothing
/// unread: a closed socket is no longer in the kernel's tables with its
/// inode, so its owner cannot be found, and there is nothing to judge.
pub(crate) fn closed_by_dialler(accepted: &std::net::TcpStream) -> bool {
    if accepted.set_nonblocking(true).is_err() {
        return false;
    }
    let closed = matches!(accepted.peek(&mut [0u8; 1]), Ok(0));
    let _ = accepted.set_nonblocking(false);
    closed
}

/// The inode of each socket `(local_port, remote_port)` of `sockets` in
/// a `/proc/net/tcp` or `tcp6` table (addresses as hex `ADDR:PORT`).
pub(crate) fn socket_inodes(table: &str, sockets: &[(u16, u16)]) -> Vec<Option<u64>> {
    let port = |field: &str| u16::from_str_radix(field.rsplit(':').next()?, 16).ok();
    let mut inodes = vec![None; sockets.len()];
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(remote), Some(inode)) = (f.get(1), f.get(2), f.get(9)) else {
            continue;
        };
        let here = (port(local), port(remote));
        for (socket, found) in sockets.iter().zip(inodes.iter_mut()) {
            if found.is_none() && here == (Some(socket.0), Some(socket.1)) {
                *found = inode.parse().ok();
            }
        }
    }
    inodes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn finds_the_socket_in_a_proc_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1\n\
           1: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2222 1\n";
        assert_eq!(
            socket_inodes(table, &[(0xC350, 0x1F90), (0x1F90, 0xC350)]),
            [Some(2222), None]
        );
    }

    #[test]
    fn a_dialler_that_closed_is_told_from_one_that_is_silent() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let silent = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (from_silent, _) = listener.accept().unwrap();
        assert!(!closed_by_dialler(&from_silent));
        let gone = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (from_gone, _) = listener.accept().unwrap();
        drop(gone);
        // The close has reached the accepted end once a read sees its end
        // of stream.
        from_gone
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        assert_eq!(
            std::io::Read::read(&mut &from_gone, &mut [0u8; 1]).unwrap(),
            0
        );
        assert!(closed_by_dialler(&from_gone));
        assert!(!closed_by_dialler(&from_silent));
        drop(silent);
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
}
