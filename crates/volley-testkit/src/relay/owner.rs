//! Which member dialled a relayed connection. A connection says whose it
//! is only inside the protocol, so the relay asks the kernel: the dialling
//! socket's inode (`/proc/net/tcp`, `/proc/net/tcp6`) and which member's
//! process holds it (`/proc/<pid>/fd`). All members run on this machine.

/// How many times the kernel's tables are read for one socket.
const TABLE_READS: usize = 3;

/// Which of the processes `pids` holds the socket connected from
/// `local_port` to `remote_port` on the loopback; `None` when none does
/// (or outside Linux).
pub(crate) fn owner(local_port: u16, remote_port: u16, pids: &[u32]) -> Option<usize> {
    // The kernel writes a large table in chunks, and a table that changes
    // meanwhile (other processes' connections coming and going) can skip
    // a row: a socket not found is looked for again.
    let inode = (0..TABLE_READS).find_map(|_| {
        ["/proc/net/tcp", "/proc/net/tcp6"]
            .iter()
            .find_map(|table| {
                let text = std::fs::read_to_string(table).ok()?;
                socket_inode(&text, local_port, remote_port)
            })
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

/// The inode of the socket from `local_port` to `remote_port` in a
/// `/proc/net/tcp` or `tcp6` table (addresses as hex `ADDR:PORT`).
pub(crate) fn socket_inode(table: &str, local_port: u16, remote_port: u16) -> Option<u64> {
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
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn finds_the_socket_in_a_proc_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1\n\
           1: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2222 1\n";
        assert_eq!(socket_inode(table, 0xC350, 0x1F90), Some(2222));
        assert_eq!(socket_inode(table, 0x1F90, 0xC350), None);
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
